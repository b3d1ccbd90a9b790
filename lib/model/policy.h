/* SPDX-License-Identifier: MIT */
/* policy.h - internal policy helpers shared by the executor and JSON surfaces. */
#ifndef EB_POLICY_H
#define EB_POLICY_H

#include <jansson.h>

#include "execbox/execbox.h"

/* Replaces every 0 field with its default. */
void eb_policy_resolve(struct execbox_policy *p);

/* Merges a jansson object; on failure *p is unchanged. */
int eb_policy_merge_object(struct execbox_policy *p, const json_t *obj, struct execbox_error *err);

/* The resolved policy as a new jansson object, NULL on ENOMEM. */
json_t *eb_policy_to_object(const struct execbox_policy *p);

/* True when two resolved policies are the same in every field (the pool and templates match a
 * sandbox to a run by it). */
bool eb_policy_equal(const struct execbox_policy *a, const struct execbox_policy *b);

#endif
