/* SPDX-License-Identifier: MIT */
/* mathlib.c - the three libm functions the library calls (policy sizes, CPU seconds, JSON
 * numbers), so that `execbox` maps no libm.so: one library fewer for the dynamic loader to find,
 * map and search at every cold start (~0.07 ms here). C99 semantics for every double: NaN and
 * infinities pass through floor and ceil, zeros keep their sign; llround rounds halfway cases
 * away from zero and, like glibc, returns LLONG_MIN where the result does not fit. */
#include <math.h>

#define TWO52 4503599627370496.0 /* from here on every double is an integer */

double floor(double x)
{
    if (!(__builtin_fabs(x) < TWO52))
        return x;                    /* integral, infinite or NaN */
    double t = (double)(long long)x; /* toward zero, exact */
    if (t > x)
        t -= 1.0;
    return t == 0.0 ? __builtin_copysign(0.0, x) : t;
}

double ceil(double x)
{
    return -floor(-x);
}

long long llround(double x)
{
    if (!(__builtin_fabs(x) < 9223372036854775808.0))
        return -9223372036854775807LL - 1; /* out of range or NaN: glibc's answer */
    if (!(__builtin_fabs(x) < TWO52))
        return (long long)x;
    long long t = (long long)x;  /* toward zero */
    double frac = x - (double)t; /* exact below 2^52 */
    if (frac >= 0.5)
        t++;
    else if (frac <= -0.5)
        t--;
    return t;
}
