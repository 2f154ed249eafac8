/**
 * At most `limit` worker starts at once: booting workers compete for CPU, and past a few at once
 * they only slow each other down (each polls /ping), so starts beyond the limit wait their turn.
 */
export function startSlots(limit: number) {
  let running = 0;
  const queue: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (running >= limit) await new Promise<void>((r) => queue.push(r));
    else running++;
    try {
      return await fn();
    } finally {
      const next = queue.shift();
      if (next) next();
      else running--;
    }
  };
}
