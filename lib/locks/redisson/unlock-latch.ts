/**
 * An unlock latch's id as Redisson's client makes it: 32 lowercase hex, unique per module instance
 * and release: the client id's first half, then the release's request id (base 36) in hex.
 */
export function unlockLatchId(clientId: string, requestId: string): string {
  const client = clientId.replace(/-/g, '').slice(0, 16);
  return client + parseInt(requestId, 36).toString(16).padStart(16, '0');
}
