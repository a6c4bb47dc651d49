import { monotonicNow } from '../../lib/monotonic-clock';

describe('monotonicNow', () => {
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('ignores a wall-clock step backward or forward (Date.now jumping 5 s)', () => {
    const before = monotonicNow();
    const wall = Date.now();
    jest.spyOn(Date, 'now').mockReturnValue(wall - 5_000);
    const afterBackward = monotonicNow();
    jest.spyOn(Date, 'now').mockReturnValue(wall + 5_000);
    const afterForward = monotonicNow();
    expect(afterBackward).toBeGreaterThanOrEqual(before);
    expect(afterForward - before).toBeLessThan(1_000);
  });

  it("follows Jest's modern fake timers, continuing from where it was when they were installed", () => {
    const before = monotonicNow();
    jest.useFakeTimers();
    const installed = monotonicNow();
    jest.advanceTimersByTime(10_000);
    const advanced = monotonicNow();
    jest.useRealTimers();
    const after = monotonicNow();
    expect(installed).toBeGreaterThanOrEqual(before);
    expect(installed - before).toBeLessThan(1_000);
    expect(advanced - installed).toBeGreaterThanOrEqual(10_000 - 1e-6); // float sums
    expect(advanced - installed).toBeLessThan(11_000);
    expect(after).toBeGreaterThanOrEqual(advanced);
  });

  it("follows a replaced Date when performance stays real (what node:test's mock timers do)", () => {
    // node:test's mock timers swap the Date of the realm they run in, not Jest's sandbox: swap it here as they do.
    const RealDate = globalThis.Date;
    let fakeNow = 1_000;
    class MockDate extends RealDate {
      static override now(): number {
        return fakeNow;
      }
    }
    const before = monotonicNow();
    globalThis.Date = MockDate as DateConstructor;
    try {
      const installed = monotonicNow();
      fakeNow += 10_000;
      const advanced = monotonicNow();
      fakeNow -= 60_000;
      const steppedBack = monotonicNow();
      expect(installed).toBeGreaterThanOrEqual(before);
      expect(installed - before).toBeLessThan(1_000);
      expect(advanced - installed).toBeCloseTo(10_000, 6);
      expect(steppedBack).toBe(advanced);
    } finally {
      globalThis.Date = RealDate;
    }
    expect(monotonicNow()).toBeGreaterThanOrEqual(before + 10_000);
  });
});
