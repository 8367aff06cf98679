/*
 * How far CLOCK_REALTIME_COARSE lags CLOCK_REALTIME, and what each costs to read: the facts
 * behind ReadClock.isBefore's margin (Sources/ImageStore/Internal/ReadClock.swift).
 *
 * 2,000 rounds of 100 back-to-back pairs (coarse, then precise), with a 1-3 ms sleep every tenth
 * round so the CPU also wakes from idle. Prints the largest lag seen, how many pairs lagged more
 * than clock_getres's resolution, and the mean cost of each read over 10 million.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static long nanoseconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static double cost(clockid_t clock) {
    long start = nanoseconds(CLOCK_MONOTONIC), sink = 0;
    for (int i = 0; i < 10000000; i++) sink += nanoseconds(clock);
    return (nanoseconds(CLOCK_MONOTONIC) - start) / 1e7 + (sink == 42);
}

int main(void) {
    struct timespec resolution;
    clock_getres(CLOCK_REALTIME_COARSE, &resolution);
    long largest = 0, over = 0, pairs = 0, ahead = 0;
    for (int round = 0; round < 2000; round++) {
        if (round % 10 == 0) usleep(1000 + round % 7 * 300);
        for (int i = 0; i < 100; i++, pairs++) {
            long coarse = nanoseconds(CLOCK_REALTIME_COARSE);
            long lag = nanoseconds(CLOCK_REALTIME) - coarse;
            if (lag > largest) largest = lag;
            if (lag > resolution.tv_nsec) over++;
            if (lag < 0) ahead++;
        }
    }
    printf("coarse resolution %ld ns; largest lag %ld ns; %ld of %ld pairs lagged more than the resolution; "
           "%ld had the coarse clock ahead\n", resolution.tv_nsec, largest, over, pairs, ahead);
    printf("read cost: CLOCK_REALTIME %.1f ns, CLOCK_REALTIME_COARSE %.1f ns\n",
           cost(CLOCK_REALTIME), cost(CLOCK_REALTIME_COARSE));
    return 0;
}
