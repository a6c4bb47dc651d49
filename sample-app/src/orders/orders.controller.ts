import { Body, Controller, Param, ParseIntPipe, Post } from '@nestjs/common';
import { OrdersService } from './orders.service';

@Controller('orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post(':orderId/payment')
  pay(@Param('orderId') orderId: string, @Body('amount', ParseIntPipe) amount: number) {
    return this.orders.pay(orderId, amount);
  }
}
