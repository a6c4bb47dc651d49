import { Injectable } from '@nestjs/common';
import Redis from 'ioredis';
import { LockService } from '../../../lib';
import { InjectAppRedis } from '../redis/app-redis.provider';

export interface PaymentResult {
  orderId: string;
  /** `paid` for the request that charged, `already-paid` for every other one. */
  status: 'paid' | 'already-paid';
  amount: number;
  paidAt: string;
}

const orderKey = (orderId: string) => `sample:order:${orderId}`;

@Injectable()
export class OrdersService {
  constructor(
    private readonly locks: LockService,
    @InjectAppRedis() private readonly redis: Redis,
  ) {}

  /**
   * Charges an order exactly once, however many instances receive the same payment at the same
   * moment (a double click, a retry): the manual form of the lock, around the check and the charge.
   */
  async pay(orderId: string, amount: number): Promise<PaymentResult> {
    return this.locks.run(`order:${orderId}`, async ({ signal }) => {
      const paid = await this.redis.hgetall(orderKey(orderId));
      if (paid.paidAt) return { orderId, status: 'already-paid', amount: Number(paid.amount), paidAt: paid.paidAt };
      await new Promise((resolve) => setTimeout(resolve, 20)); // the call to the payment provider
      signal.throwIfAborted(); // the lock was lost meanwhile: do not record a payment unprotected
      const paidAt = new Date().toISOString();
      await this.redis.hset(orderKey(orderId), { amount, paidAt });
      return { orderId, status: 'paid', amount, paidAt };
    });
  }
}
