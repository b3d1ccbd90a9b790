/* SPDX-License-Identifier: MIT */
/* test_cli_mathlib.c - src/cli/mathlib.c's floor, ceil and llround (linked into `execbox` in
 * place of libm) against glibc's libm, loaded here with dlopen: the special values (zeros and
 * their signs, halves, the edges of exactness and of long long, infinities, NaN, subnormals)
 * and two million others. */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static double (*libm_floor)(double), (*libm_ceil)(double);
static long long (*libm_llround)(double);

static int load(void **state)
{
    (void)state;
    void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    libm_floor = (double (*)(double))dlsym(h, "floor");
    libm_ceil = (double (*)(double))dlsym(h, "ceil");
    libm_llround = (long long (*)(double))dlsym(h, "llround");
    return libm_floor && libm_ceil && libm_llround ? 0 : -1;
}

static bool same(double a, double b)
{
    return (a != a && b != b) || memcmp(&a, &b, sizeof(a)) == 0; /* NaN, or bit for bit */
}

/* Called through pointers: the compiler may expand a direct floor() or ceil() inline, and the
 * functions under test are the ones linked in. */
static double (*volatile our_floor)(double) = floor, (*volatile our_ceil)(double) = ceil;
static long long (*volatile our_llround)(double) = llround;

static void check(double x)
{
    if (!same(our_floor(x), libm_floor(x)) || !same(our_ceil(x), libm_ceil(x)))
        fail_msg("floor/ceil(%.17g)", x);
    if (x == x && fabs(x) < 9.2e18 && our_llround(x) != libm_llround(x))
        fail_msg("llround(%.17g) = %lld, libm %lld", x, our_llround(x), libm_llround(x));
}

static void test_special_values(void **state)
{
    (void)state;
    /* Ours, not libm's (which dlsym found in libm itself). */
    assert_true((void *)our_floor != (void *)libm_floor && (void *)our_ceil != (void *)libm_ceil);
    const double v[] = {0.0,
                        0.5,
                        1.5,
                        2.5,
                        0.49999999999999994,
                        0.5000000000000001,
                        1e-320,
                        0.3,
                        1e300,
                        4503599627370495.5,
                        4503599627370496.0,
                        9007199254740993.0,
                        9.2233720368547748e18,
                        1073741824.5,
                        16777216.25,
                        1.0 / 0.0,
                        0.0 / 0.0};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        check(v[i]);
        check(-v[i]);
    }
}

static void test_many_values(void **state)
{
    (void)state;
    srand(1);
    for (long n = 0; n < 2000000; n++) {
        double x;
        if (n % 2) {
            uint64_t b = ((uint64_t)rand() << 33) ^ ((uint64_t)rand() << 11) ^ (uint64_t)rand();
            memcpy(&x, &b, sizeof(x));
        } else {
            x = ((double)rand() / RAND_MAX - 0.5) * ldexp(1.0, rand() % 70);
        }
        check(x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_special_values),
        cmocka_unit_test(test_many_values),
    };
    return cmocka_run_group_tests(tests, load, NULL);
}
