/** How long `waitFor` polls, and what it waits for (named in the error when the deadline passes). */
export interface WaitForOptions {
  /** What the condition means, for the error: "the waiter to join the line". */
  readonly what: string;
  /** A generous upper bound that only catches hangs, never a pace the test relies on. Default 10 s. */
  readonly timeoutMs?: number;
  /** Pause between two looks. Default 10 ms. */
  readonly stepMs?: number;
}

/**
 * Polls `condition` until it holds; throws naming `what` once `timeoutMs` passed. Tests wait for the
 * thing itself rather than sleeping and hoping it happened meanwhile.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  { what, timeoutMs = 10_000, stepMs = 10 }: WaitForOptions,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}

/** `waitFor`'s error when a loop that cannot be written as one condition runs past its deadline. */
export function deadline(timeoutMs: number, what: string): () => void {
  const at = Date.now() + timeoutMs;
  return () => {
    if (Date.now() > at) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
  };
}
