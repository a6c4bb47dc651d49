/** One answered request. */
export interface Answer {
  status: number;
  /** Time the request waited for the lock before its work began, as the app measured it. */
  waitedMs: number | undefined;
}

/** Fires `requests` reservations of 1 at once, round-robin over the instances, and collects the answers. */
export async function fireReservations(instanceUrls: readonly string[], path: string, requests: number): Promise<Answer[]> {
  return Promise.all(
    Array.from({ length: requests }, async (_, i): Promise<Answer> => {
      try {
        const response = await fetch(`${instanceUrls[i % instanceUrls.length]}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ quantity: 1 }),
        });
        const body = (await response.json().catch(() => ({}))) as { waitedMs?: number };
        return { status: response.status, waitedMs: body.waitedMs };
      } catch {
        return { status: 0, waitedMs: undefined }; // connection refused or reset
      }
    }),
  );
}

/** PUT `stock` on the product through one instance. */
export async function setStock(instanceUrl: string, sku: string, stock: number): Promise<void> {
  const response = await fetch(`${instanceUrl}/products/${sku}/stock`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ stock }),
  });
  if (!response.ok) throw new Error(`setting stock of ${sku} answered ${response.status}: ${await response.text()}`);
}

export async function getStock(instanceUrl: string, sku: string): Promise<number> {
  const response = await fetch(`${instanceUrl}/products/${sku}`);
  return ((await response.json()) as { stock: number }).stock;
}
