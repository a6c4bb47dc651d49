import { Injectable, NotFoundException } from '@nestjs/common';
import Redis from 'ioredis';
import { DistributedLock } from '../../../lib';
import { InjectAppRedis } from '../redis/app-redis.provider';

/** What a reservation attempt found. */
export interface ReservationOutcome {
  reserved: boolean;
  /** Stock left after the attempt. */
  remaining: number;
  /** When the work began (after the lock was acquired, for the locked endpoint). */
  startedAt: number;
}

const stockKey = (sku: string) => `sample:stock:${sku}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

@Injectable()
export class ProductsService {
  constructor(@InjectAppRedis() private readonly redis: Redis) {}

  async setStock(sku: string, stock: number): Promise<{ sku: string; stock: number }> {
    await this.redis.set(stockKey(sku), stock);
    return { sku, stock };
  }

  async getStock(sku: string): Promise<{ sku: string; stock: number }> {
    const stock = await this.redis.get(stockKey(sku));
    if (stock === null) throw new NotFoundException(`No product "${sku}"`);
    return { sku, stock: Number(stock) };
  }

  /**
   * Reserves stock with one product's reservations taking turns across every instance of the app:
   * the lock is named after the `sku` parameter (`stock:ABC-1`).
   */
  @DistributedLock('stock:#sku', { waitTime: 15_000 })
  async reserve(sku: string, quantity: number): Promise<ReservationOutcome> {
    return this.takeFromStock(sku, quantity);
  }

  /** The same work with no lock, for contrast: concurrent requests read the same stock and oversell. */
  async reserveUnlocked(sku: string, quantity: number): Promise<ReservationOutcome> {
    return this.takeFromStock(sku, quantity);
  }

  /** Read, check, write: correct only while no one else does it for the same product at the same time. */
  private async takeFromStock(sku: string, quantity: number): Promise<ReservationOutcome> {
    const startedAt = Date.now();
    const { stock } = await this.getStock(sku);
    if (stock < quantity) return { reserved: false, remaining: stock, startedAt };
    await sleep(5); // stands for real work between the read and the write (pricing, a warehouse call...)
    await this.redis.set(stockKey(sku), stock - quantity);
    return { reserved: true, remaining: stock - quantity, startedAt };
  }
}
