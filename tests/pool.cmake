# SPDX-License-Identifier: MIT
# Warm pool tests (lib/pool.c).
eb_unit_test(pool)
