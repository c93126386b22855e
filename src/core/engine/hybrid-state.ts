/** The words the hybrid engine and its watcher thread share (an Int32Array over a SharedArrayBuffer). */
export const STATE = {
  /** Bumped by the application thread: "I armed the worker; watch its fd". */
  WATCH: 0,
  /** Bumped by the watcher when the fd turned readable, and by the application to wake itself. */
  EVENT: 1,
  /** Set to make the watcher return. */
  STOP: 2,
  /** Set by the watcher once it serves watch requests (starting a thread takes 0.1-1.6 s). */
  READY: 3,
} as const;
export const STATE_BYTES = 16;
