/**
 * Asynchronous copies between GPU and pinned host memory, awaited without blocking the thread:
 * each copy is queued on a CUDA stream with an event recorded after it, and the event is polled
 * (cudaEventQuery) between turns of the event loop, so UCX's progress (the progress thread, or
 * the application's own progress calls in polling mode) goes on while the copy engine works.
 */
import { CUDA_ERROR, type CudaRuntime, type Pointer } from "../../ffi/index.ts";
import { OutSlots } from "../out-slots.ts";
import { cudaCheck, requireCuda } from "./runtime.ts";

const g = globalThis as { setImmediate?: (f: () => void) => unknown };
/** One turn of the event loop (setImmediate where the runtime has it: setTimeout(0) may cost 1 ms). */
const turn = (): Promise<void> => new Promise((r) => (g.setImmediate ? g.setImmediate(r) : setTimeout(r, 0)));

/** One CUDA stream and an event per copy in flight on it. */
export class CopyStream {
  private readonly cuda: CudaRuntime;
  readonly stream: Pointer;
  private closed = false;

  constructor() {
    this.cuda = requireCuda("a GPU copy");
    const out = new OutSlots(1);
    cudaCheck(this.cuda, this.cuda.cudaStreamCreate(out.address(0)), "cudaStreamCreate");
    this.stream = out.pointer(0);
  }

  /** Queue `length` bytes from `source` to `target` (cudaMemcpyKind `kind`); resolves when done. */
  async copy(target: Pointer, source: Pointer, length: number, kind: number): Promise<void> {
    if (length === 0) return;
    const cuda = this.cuda;
    cudaCheck(cuda, cuda.cudaMemcpyAsync(target, source, length, kind, this.stream), "cudaMemcpyAsync");
    const out = new OutSlots(1);
    cudaCheck(cuda, cuda.cudaEventCreate(out.address(0)), "cudaEventCreate");
    const event = out.pointer(0);
    try {
      cudaCheck(cuda, cuda.cudaEventRecord(event, this.stream), "cudaEventRecord");
      for (;;) {
        const status = cuda.cudaEventQuery(event);
        if (status === CUDA_ERROR.success) break;
        if (status !== CUDA_ERROR.notReady) cudaCheck(cuda, status, "cudaEventQuery");
        await turn();
      }
      // A copy that failed while it ran (not at the call) reports on the stream.
      cudaCheck(cuda, cuda.cudaStreamSynchronize(this.stream), "cudaMemcpyAsync (completion)");
    } finally {
      cuda.cudaEventDestroy(event);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cuda.cudaStreamSynchronize(this.stream);
    this.cuda.cudaStreamDestroy(this.stream);
  }
}

const idleStreams: CopyStream[] = [];

/** Run `fn` with a copy stream of the process's small pool (streams are reused, not recreated). */
export async function withStream<T>(fn: (s: CopyStream) => Promise<T>): Promise<T> {
  const s = idleStreams.pop() ?? new CopyStream();
  try {
    return await fn(s);
  } finally {
    idleStreams.push(s);
  }
}
