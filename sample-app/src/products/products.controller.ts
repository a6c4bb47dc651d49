import { Body, ConflictException, Controller, DefaultValuePipe, Get, Param, ParseIntPipe, Post, Put } from '@nestjs/common';
import { ProductsService, ReservationOutcome } from './products.service';

/** What a reservation answers (201, or 409 when out of stock). */
export interface ReservationResponse {
  sku: string;
  quantity: number;
  remaining: number;
  /** Time between the request reaching the controller and the reservation work starting. */
  waitedMs: number;
}

@Controller('products')
export class ProductsController {
  constructor(private readonly products: ProductsService) {}

  @Put(':sku/stock')
  setStock(@Param('sku') sku: string, @Body('stock', ParseIntPipe) stock: number) {
    return this.products.setStock(sku, stock);
  }

  @Get(':sku')
  getStock(@Param('sku') sku: string) {
    return this.products.getStock(sku);
  }

  /** Reserves under the product's distributed lock (423 Locked if it stays busy too long). */
  @Post(':sku/reservations')
  async reserve(@Param('sku') sku: string, @Body('quantity', new DefaultValuePipe(1), ParseIntPipe) quantity: number) {
    const arrivedAt = Date.now();
    return answer(sku, quantity, arrivedAt, await this.products.reserve(sku, quantity));
  }

  /** The same reservation without a lock. Do not do this. */
  @Post(':sku/reservations-unlocked')
  async reserveUnlocked(@Param('sku') sku: string, @Body('quantity', new DefaultValuePipe(1), ParseIntPipe) quantity: number) {
    const arrivedAt = Date.now();
    return answer(sku, quantity, arrivedAt, await this.products.reserveUnlocked(sku, quantity));
  }
}

function answer(sku: string, quantity: number, arrivedAt: number, outcome: ReservationOutcome): ReservationResponse {
  const response = { sku, quantity, remaining: outcome.remaining, waitedMs: outcome.startedAt - arrivedAt };
  if (!outcome.reserved) throw new ConflictException({ statusCode: 409, message: `Out of stock: ${sku}`, ...response });
  return response;
}
