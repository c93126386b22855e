/**
 * A failure the command explains in its own words: main prints `ucx-ts <command>: <message>`,
 * exit status 1, without the class name or a stack (unless --verbose).
 */
export class CommandFailure extends Error {
  override name = "CommandFailure";
}
