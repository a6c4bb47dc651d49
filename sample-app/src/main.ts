import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { registerConsoleTelemetry } from './telemetry';

/** One instance of the sample app. Run several (PORT=3001, 3002...) against one Redis. */
async function bootstrap(): Promise<void> {
  // Before the application is created: LockModule takes the global meter and tracer when it starts.
  if (process.env.OTEL_CONSOLE === '1') registerConsoleTelemetry();
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  console.log(`sample-app listening on http://127.0.0.1:${port}`);
}

bootstrap().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
