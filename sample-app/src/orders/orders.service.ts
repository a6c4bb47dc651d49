import { Injectable } from '@nestjs/common';
import Redis from 'ioredis';
import { LockService } from '../../../lib';
import { FencedStore } from '../fencing/fenced-store';
import { InjectAppRedis } from '../redis/app-redis.provider';

export interface PaymentResult {
  orderId: string;
  /**
   * `paid` for the request that charged, `already-paid` for every other one; `stale` when the lock
   * was lost and a newer holder had already written (the store refused the old fencing token).
   */
  status: 'paid' | 'already-paid' | 'stale';
  amount: number;
  paidAt: string;
}

const orderKey = (orderId: string) => `sample:order:${orderId}`;

@Injectable()
export class OrdersService {
  constructor(
    private readonly locks: LockService,
    private readonly store: FencedStore,
    @InjectAppRedis() private readonly redis: Redis,
  ) {}

  /**
   * Charges an order exactly once, however many instances receive the same payment at the same
   * moment (a double click, a retry): the manual form of the lock, around the check and the charge.
   */
  async pay(orderId: string, amount: number): Promise<PaymentResult> {
    return this.locks.run(`order:${orderId}`, async ({ signal, fencingToken }) => {
      const paid = await this.redis.hgetall(orderKey(orderId));
      if (paid.paidAt) return { orderId, status: 'already-paid', amount: Number(paid.amount), paidAt: paid.paidAt };
      await new Promise((resolve) => setTimeout(resolve, 20)); // the call to the payment provider
      signal.throwIfAborted(); // the lock was lost meanwhile: do not record a payment unprotected
      const paidAt = new Date().toISOString();
      // Even a holder paused past its lease after that check cannot overwrite a newer holder's write.
      const written = await this.store.write(orderKey(orderId), { amount, paidAt }, fencingToken);
      return { orderId, status: written ? 'paid' : 'stale', amount, paidAt };
    });
  }
}
