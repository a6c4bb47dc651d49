/**
 * Opt-in (`OTEL_CONSOLE=1`): registers an OpenTelemetry meter provider that prints the lock metrics
 * to the console every 10 s, and a tracer provider that prints each `lock.acquire` span. Loaded
 * before the application is created: LockModule takes the global meter and tracer when it starts.
 * Uses the SDK packages (dev dependencies of this repository; `npm i @opentelemetry/sdk-metrics
 * @opentelemetry/sdk-trace-base` in an app).
 */
export function registerConsoleTelemetry(): void {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { metrics, trace } = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
  const { ConsoleMetricExporter, MeterProvider, PeriodicExportingMetricReader } =
    require('@opentelemetry/sdk-metrics') as typeof import('@opentelemetry/sdk-metrics');
  const { BasicTracerProvider, ConsoleSpanExporter, SimpleSpanProcessor } =
    require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  /* eslint-enable @typescript-eslint/no-require-imports */
  metrics.setGlobalMeterProvider(
    new MeterProvider({
      readers: [new PeriodicExportingMetricReader({ exporter: new ConsoleMetricExporter(), exportIntervalMillis: 10_000 })],
    }),
  );
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())] }));
}
