// SPDX-License-Identifier: MIT
// Validates deploy/kubernetes/*.yaml offline: each object against the Kubernetes API schemas
// (kubernetes-models, pinned by package-lock.json), every key against the names those schemas
// know (a misspelt field would otherwise pass: the schemas allow unknown fields), and the
// settings that must agree with each other and with execbox (probes, drain budget, resources
// against the pool, selectors, the HPA's metric). Exits 1 naming each problem.
//   node validate.mjs SOURCE_DIR
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { parseAllDocuments, isMap, isPair, isScalar } from "yaml";
import { Deployment } from "kubernetes-models/apps/v1";
import { Service, Secret } from "kubernetes-models/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";

const src = process.argv[2];
const dir = path.join(src, "deploy", "kubernetes");
const problems = [];
const bad = (file, msg) => problems.push(`${file}: ${msg}`);
const models = {
  "apps/v1/Deployment": Deployment,
  "v1/Service": Service,
  "v1/Secret": Secret,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
  "autoscaling/v2/HorizontalPodAutoscaler": HorizontalPodAutoscaler,
};

// Every property name the generated validators mention.
const require = createRequire(import.meta.url);
const known = new Set();
for (const pkg of ["kubernetes-models", "@kubernetes-models/apimachinery"]) {
  const schemas = path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "_schemas");
  for (const f of fs.readdirSync(schemas)) {
    const text = fs.readFileSync(path.join(schemas, f), "utf8");
    for (const m of text.matchAll(/"([A-Za-z][A-Za-z0-9-]*)"/g)) known.add(m[1]);
    for (const m of text.matchAll(/\.([A-Za-z][A-Za-z0-9]*)/g)) known.add(m[1]);
  }
}
// Maps whose keys are the user's own (labels, resource names ...).
const freeMaps = new Set(["labels", "annotations", "matchLabels", "stringData", "data",
  "requests", "limits", "nodeSelector"]);
function checkKeys(file, obj, where, parentKey) {
  if (Array.isArray(obj)) return obj.forEach((v, i) => checkKeys(file, v, `${where}[${i}]`, parentKey));
  if (!obj || typeof obj !== "object") return;
  if (freeMaps.has(parentKey) || (parentKey === "selector" && where.endsWith("spec.selector") &&
      !obj.matchLabels)) return;
  for (const [k, v] of Object.entries(obj)) {
    if (!known.has(k)) bad(file, `unknown field '${where}.${k}'`);
    checkKeys(file, v, `${where}.${k}`, k);
  }
}

// Each securityContext setting of a container must be explained by a comment: its own (before
// or after it, or inside its value), or one on the setting just before it (a comment may
// explain a pair of settings).
const hasComment = (node) => !!node && (!!node.commentBefore || !!node.comment ||
  (node.items || []).some((p) => hasComment(isPair(p) ? p.key : p) || hasComment(isPair(p) ? p.value : null)));
function checkComments(file, doc) {
  const visit = (node) => {
    if (isMap(node)) {
      for (const pair of node.items) {
        const k = isScalar(pair.key) ? pair.key.value : null;
        if (k === "securityContext" && isMap(pair.value)) {
          const items = pair.value.items;
          items.forEach((p, i) => {
            const own = hasComment(p.key) || hasComment(p.value);
            const first = i === 0 && pair.value.commentBefore;
            const prev = i > 0 && !!items[i - 1].key.commentBefore;
            if (!own && !first && !prev)
              bad(file, `securityContext.${p.key.value} has no comment saying why`);
          });
        }
        visit(pair.value);
      }
    } else if (node?.items) node.items.forEach(visit);
  };
  visit(doc.contents);
}

const objects = {};
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort()) {
  const text = fs.readFileSync(path.join(dir, f), "utf8");
  if (!text.startsWith("# SPDX-License-Identifier: MIT")) bad(f, "no SPDX line");
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length) { bad(f, `YAML: ${doc.errors[0].message}`); continue; }
    const obj = doc.toJS();
    if (!obj) continue;
    const key = `${obj.apiVersion}/${obj.kind}`;
    const Model = models[key];
    if (!Model) { bad(f, `no schema for ${key}`); continue; }
    try {
      new Model(obj).validate();
    } catch (e) {
      bad(f, `${key}: ${e.message}`);
    }
    checkKeys(f, obj, obj.kind, null);
    if (obj.kind === "Deployment") checkComments(f, doc);
    objects[obj.kind] = obj;
  }
}

const dep = objects.Deployment, svc = objects.Service, pdb = objects.PodDisruptionBudget;
const hpa = objects.HorizontalPodAutoscaler;
for (const k of ["Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"])
  if (!objects[k]) bad("deploy/kubernetes", `no ${k}`);
if (dep) {
  const pod = dep.spec.template.spec, c = pod.containers[0];
  const labels = dep.spec.template.metadata.labels;
  const arg = (name) => {
    const a = c.args.find((x) => x.startsWith(`--${name}=`));
    return a ? a.slice(name.length + 3) : undefined;
  };
  const seconds = (n) => Number(arg(n));
  const size = (s) => {
    const m = /^(\d+(?:\.\d+)?)([KMG]i?)?$/.exec(s || "");
    if (!m) return NaN;
    const mult = { K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30 }[m[2]] || 1;
    return Number(m[1]) * mult;
  };
  if (c.args[0] !== "serve") bad("deployment.yaml", "the container does not run `serve`");
  const port = c.ports.find((p) => p.name === "http");
  if (!port || arg("listen") !== `0.0.0.0:${port.containerPort}`)
    bad("deployment.yaml", "--listen does not match the http container port");
  for (const p of ["readinessProbe", "livenessProbe"]) {
    const g = c[p]?.httpGet;
    if (!g || g.path !== "/v1/health" || g.port !== "http") bad("deployment.yaml", `${p} is not GET /v1/health on http`);
  }
  const grace = seconds("drain-grace"), drain = seconds("drain-timeout");
  const tgps = pod.terminationGracePeriodSeconds;
  if (!(grace > 0)) bad("deployment.yaml", "no --drain-grace: load balancers would not see the pod leave");
  const r = c.readinessProbe;
  if (!(grace > r.periodSeconds * r.failureThreshold))
    bad("deployment.yaml", "--drain-grace is not longer than the readiness probe needs to see 503");
  if (!(grace + drain + 5 <= tgps))
    bad("deployment.yaml", `terminationGracePeriodSeconds ${tgps} < drain-grace + drain-timeout + 5`);
  const l = c.livenessProbe;
  if (l.periodSeconds * l.failureThreshold < tgps)
    bad("deployment.yaml", "liveness would restart a draining pod (period x threshold < the drain budget)");
  const workers = Number(arg("workers")), mem = size(arg("memory"));
  const req = c.resources.requests;
  if (Number(req.cpu) !== workers) bad("deployment.yaml", `cpu request ${req.cpu} != --workers ${workers}`);
  if (size(req.memory) < workers * mem) bad("deployment.yaml", "memory request below workers x --memory");
  if (size(c.resources.limits.memory) < size(req.memory)) bad("deployment.yaml", "memory limit below request");
  const sc = c.securityContext;
  if (sc.privileged !== false) bad("deployment.yaml", "the container must not be privileged");
  if (!sc.capabilities?.drop?.includes("ALL")) bad("deployment.yaml", "capabilities must drop ALL first");
  if (dep.spec.strategy.rollingUpdate.maxUnavailable !== 0)
    bad("deployment.yaml", "a rolling update must not take a pod out before its successor is ready");
  const env = c.env.find((e) => e.name === "EXECBOX_TOKEN");
  if (!env?.valueFrom?.secretKeyRef) bad("deployment.yaml", "the token does not come from a Secret");
  const matches = (sel) => sel && Object.entries(sel).every(([k, v]) => labels[k] === v);
  if (svc && !matches(svc.spec.selector)) bad("service.yaml", "selector does not match the pods");
  if (svc && svc.spec.ports[0].targetPort !== "http") bad("service.yaml", "targetPort is not the http port");
  if (pdb && !matches(pdb.spec.selector.matchLabels)) bad("pdb.yaml", "selector does not match the pods");
  if (hpa) {
    if (hpa.spec.scaleTargetRef.name !== dep.metadata.name) bad("hpa.yaml", "does not target the Deployment");
    const metric = hpa.spec.metrics[0].pods.metric.name;
    const exported = fs.readFileSync(path.join(src, "src", "httpd", "metrics.c"), "utf8");
    if (!exported.includes(`# TYPE ${metric} gauge`)) bad("hpa.yaml", `execbox exports no gauge '${metric}'`);
  }
}

if (problems.length) {
  for (const p of problems) console.error(`FAIL ${p}`);
  process.exit(1);
}
console.log(`ok: ${Object.keys(objects).length} objects valid against the Kubernetes schemas (kubernetes-models)`);
