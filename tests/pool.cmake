# SPDX-License-Identifier: MIT
# Warm pool tests (lib/core/pool.c).
eb_unit_test(pool)
