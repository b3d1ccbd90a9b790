# SPDX-License-Identifier: MIT
# Warm pool tests (lib/core/pool.c), and the template registry's generations over a fake backend
# (lib/core/template.c).
eb_unit_test(pool)
eb_unit_test(template)
