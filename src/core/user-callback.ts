/**
 * Calling the application's callbacks (endpoint and listener events, active-message handlers)
 * from inside the progress engine. Such a call runs while completions are being delivered, in
 * polling and blocking modes inside `worker.progress()`: an exception it throws must not unwind
 * through the engine (the completions after it would be lost, and `progress()` would throw an
 * error that belongs to the application). It is rethrown on its own microtask instead, where it
 * is an uncaught exception like one thrown by an EventEmitter listener.
 */
export function callUserCallback<A extends unknown[]>(callback: ((...args: A) => void) | undefined, ...args: A): void {
  if (!callback) return;
  try {
    callback(...args);
  } catch (e) {
    queueMicrotask(() => {
      throw e;
    });
  }
}
