// Validates deploy/kubernetes/*.yaml offline against the Kubernetes schemas (the npm package
// kubernetes-models) and checks what `shardflow train --cluster auto` relies on: every Job is an
// indexed Job whose pods' subdomain is the headless Service, SHARDFLOW_NUM_TASKS equals the
// workers Job's completions, the Service selects the Jobs' pods, and the container runs
// `train --cluster=auto`.
//
//   node tests/deploy/validate_manifests.js DEPLOY_DIR NODE_MODULES_DIR
//
// Exit 77 (skipped) when kubernetes-models or js-yaml are not installed (.ci/setup.sh installs
// them into build/npm when npm is there).
"use strict";
const fs = require("fs");
const path = require("path");
const [deployDir, modules] = process.argv.slice(2);
let yaml, models;
try {
  yaml = require(path.join(modules, "js-yaml"));
  models = {
    Service: require(path.join(modules, "kubernetes-models/v1")).Service,
    PersistentVolumeClaim: require(path.join(modules, "kubernetes-models/v1")).PersistentVolumeClaim,
    Job: require(path.join(modules, "kubernetes-models/batch/v1")).Job,
  };
} catch (e) {
  console.log("SKIPPED: kubernetes-models / js-yaml not installed in " + modules +
              " (npm install --prefix build/npm kubernetes-models js-yaml)");
  process.exit(77);
}
const dir = path.join(deployDir, "kubernetes");
const docs = [];
for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort()) {
  for (const doc of yaml.loadAll(fs.readFileSync(path.join(dir, file), "utf8"))) {
    if (doc) docs.push({ file, doc });
  }
}
let failures = 0;
function check(ok, what) {
  console.log((ok ? "ok   " : "FAIL ") + what);
  if (!ok) failures++;
}
for (const { file, doc } of docs) {
  const Model = models[doc.kind];
  check(Model !== undefined, `${file}: kind ${doc.kind} is one this test knows`);
  if (!Model) continue;
  try {
    new Model(doc).validate();
    check(true, `${file}: ${doc.kind} ${doc.metadata.name} is valid against the schema`);
  } catch (e) {
    check(false, `${file}: ${doc.kind} ${doc.metadata.name}: ${e.message}`);
  }
}
const services = docs.filter((d) => d.doc.kind === "Service").map((d) => d.doc);
const jobs = docs.filter((d) => d.doc.kind === "Job").map((d) => d.doc);
check(services.length === 1 && services[0].spec.clusterIP === "None", "one headless Service");
const service = services[0];
const envOf = (job) => Object.fromEntries(
  (job.spec.template.spec.containers[0].env || []).map((e) => [e.name, e.value]));
const workers = jobs.find((j) => (envOf(j).SHARDFLOW_JOB || "worker") === "worker");
check(workers !== undefined, "a workers Job");
for (const job of jobs) {
  const spec = job.spec.template.spec;
  const env = envOf(job);
  const args = spec.containers[0].args || [];
  check(job.spec.completionMode === "Indexed", `${job.metadata.name}: an indexed Job`);
  check(job.spec.parallelism === job.spec.completions,
        `${job.metadata.name}: every index runs at once (parallelism = completions)`);
  check(spec.subdomain === service.metadata.name,
        `${job.metadata.name}: pods' subdomain is the headless Service (<job>-<i>.${service.metadata.name})`);
  check(env.SHARDFLOW_SERVICE === service.metadata.name, `${job.metadata.name}: SHARDFLOW_SERVICE`);
  check(Number(env.SHARDFLOW_NUM_TASKS) === workers.spec.completions,
        `${job.metadata.name}: SHARDFLOW_NUM_TASKS = the workers Job's completions`);
  check(args[0] === "train" && args.includes("--cluster=auto"),
        `${job.metadata.name}: runs train --cluster=auto`);
  check(spec.restartPolicy === "OnFailure", `${job.metadata.name}: a failed pod restarts in place`);
  const labels = job.spec.template.metadata.labels || {};
  check(Object.entries(service.spec.selector).every(([k, v]) => labels[k] === v),
        `${job.metadata.name}: the Service selects its pods`);
  if (env.SHARDFLOW_JOB === "ps") {
    check(env.SHARDFLOW_WORKER_JOB_NAME === workers.metadata.name &&
          Number(env.SHARDFLOW_NUM_PS) === job.spec.completions,
          `${job.metadata.name}: names the workers Job and its own size`);
  }
}
if (workers) {
  const args = workers.spec.template.spec.containers[0].args;
  check(args.includes("--auto-resume") &&
        workers.spec.template.spec.containers[0].volumeMounts.some((m) =>
          args.includes(`--checkpoint-dir=${m.mountPath}`)),
        "the workers checkpoint to a mounted volume and resume from it");
}
console.log(`${docs.length} documents, ${failures} failure(s)`);
process.exit(failures ? 1 : 0);
