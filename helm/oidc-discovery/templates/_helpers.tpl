{{/*
Names and labels.
*/}}
{{- define "oidc-discovery.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The objects' name: <release>-<chart name>, without saying a word twice. A
release whose name contains the chart's (oidc-discovery, my-oidc-discovery)
is the name, as in most charts; so is the chart's name for a release named
by its first words (oidc: oidc-discovery, not oidc-oidc-discovery). Two such
releases in one namespace (oidc and oidc-discovery) would share the names:
helm refuses the second, whose objects belong to the first.
*/}}
{{- define "oidc-discovery.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else if hasPrefix (printf "%s-" .Release.Name) $name }}
{{- $name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The Service of the admin and TokenReview ports, and the label that tells it
from the public Service (the ServiceMonitor selects on it). The name stays
within the 63 characters of a Service name.
*/}}
{{- define "oidc-discovery.internalServiceName" -}}
{{- printf "%s-internal" (include "oidc-discovery.fullname" . | trunc 54 | trimSuffix "-") }}
{{- end }}

{{- define "oidc-discovery.internalComponent" -}}
app.kubernetes.io/component: internal
{{- end }}

{{- define "oidc-discovery.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "oidc-discovery.selectorLabels" -}}
app.kubernetes.io/name: {{ include "oidc-discovery.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "oidc-discovery.labels" -}}
helm.sh/chart: {{ include "oidc-discovery.chart" . }}
{{ include "oidc-discovery.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "oidc-discovery.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "oidc-discovery.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "oidc-discovery.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/*
"true" in control-plane mode (a DaemonSet reading the host's key file).
*/}}
{{- define "oidc-discovery.controlPlane" -}}
{{- if .Values.keys.controlPlane.enabled }}true{{ end }}
{{- end }}

{{/*
The key sources the values name, as a list of the values that name them.
*/}}
{{- define "oidc-discovery.keySources" -}}
{{- $sources := list }}
{{- if .Values.keys.existingSecret }}{{ $sources = append $sources "keys.existingSecret" }}{{ end }}
{{- if .Values.keys.existingConfigMap }}{{ $sources = append $sources "keys.existingConfigMap" }}{{ end }}
{{- if .Values.keys.controlPlane.enabled }}{{ $sources = append $sources "keys.controlPlane.enabled" }}{{ end }}
{{- if eq .Values.keys.source "apiserver" }}{{ $sources = append $sources "keys.source=apiserver" }}{{ end }}
{{- join "," $sources }}
{{- end }}

{{/*
"true" in apiserver mode: the keys come from the cluster's own API server
(--upstream in-cluster), asked for with keys.source=apiserver or chosen
because no other key source is set. Never for a fleet (issuers), whose
issuers name their own keys.
*/}}
{{- define "oidc-discovery.apiserver" -}}
{{- $sources := include "oidc-discovery.keySources" . }}
{{- if and (not .Values.issuers) (or (not $sources) (eq $sources "keys.source=apiserver")) }}true{{ end }}
{{- end }}

{{/*
Where apiserver mode mounts the pod's own projected service-account token
and the cluster CA: the path every in-cluster client looks in.
*/}}
{{- define "oidc-discovery.podServiceAccountDir" -}}
/var/run/secrets/kubernetes.io/serviceaccount
{{- end }}

{{/*
The ClusterRoleBinding of apiserver mode: cluster-scoped, so the namespace
is part of its name, <namespace>:<fullname>:issuer-discovery, unless the
fullname already starts with it (namespace oidc, fullname oidc-discovery:
oidc-discovery:issuer-discovery). Neither a namespace nor a fullname has a
colon, so the count of colons tells the two forms apart and no two
releases get one name.
*/}}
{{- define "oidc-discovery.issuerDiscoveryBindingName" -}}
{{- include "oidc-discovery.clusterScopedName" (list . "issuer-discovery") }}
{{- end }}

{{/*
The name of a cluster-scoped object of the release for one purpose (list
of the context and the purpose): <namespace>:<fullname>:<purpose>, or
<fullname>:<purpose> when the fullname already starts with the namespace.
*/}}
{{- define "oidc-discovery.clusterScopedName" -}}
{{- $ctx := index . 0 }}
{{- $fullname := include "oidc-discovery.fullname" $ctx }}
{{- if hasPrefix (printf "%s-" $ctx.Release.Namespace) $fullname }}
{{- printf "%s:%s" $fullname (index . 1) }}
{{- else }}
{{- printf "%s:%s:%s" $ctx.Release.Namespace $fullname (index . 1) }}
{{- end }}
{{- end }}

{{/*
"true" when legacy Secret-based tokens are accepted, by the value or a flag
in extraArgs: the bound-object check then reads their Secrets.
*/}}
{{- define "oidc-discovery.acceptLegacyTokens" -}}
{{- if or .Values.tokenReview.acceptLegacyTokens (has "--accept-legacy-tokens" .Values.extraArgs) }}true{{ end }}
{{- end }}

{{/*
Checks the schema cannot express, or repeats it with a clearer message (the
schema may be skipped with --skip-schema-validation). Renders nothing.
*/}}
{{- define "oidc-discovery.validate" -}}
{{- if and .Values.issuer .Values.issuers }}
{{- fail "issuer and issuers exclude each other: set issuer for one cluster's issuer, or issuers (a map name -> settings, each with its serviceAccountIssuer) for a fleet" }}
{{- end }}
{{- if .Values.issuers }}
{{- include "oidc-discovery.validateFleet" . }}
{{- else if not .Values.issuer }}
{{- fail "issuer is required: set it to kube-apiserver's --service-account-issuer, an https URL (e.g. --set issuer=https://oidc.example.com), or issuers for a fleet" }}
{{- end }}
{{- $sources := include "oidc-discovery.keySources" . }}
{{- if gt (len (splitList "," $sources)) 1 }}
{{- fail (printf "keys: give at most one key source; got %s (the sources: keys.existingSecret, keys.existingConfigMap, keys.controlPlane.enabled or keys.source=apiserver; with none, the keys come from the API server)" (replace "," " and " $sources)) }}
{{- end }}
{{- if and .Values.keys.controlPlane.enabled .Values.autoscaling.enabled }}
{{- fail "autoscaling.enabled does not apply to keys.controlPlane.enabled (a DaemonSet on the control-plane nodes): disable one of them" }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- include "oidc-discovery.validateTokenReview" . }}
{{- end }}

{{/*
A fleet (issuers): what the server does not take with --issuers-dir, or
not per issuer yet, is refused here, naming the value; and each issuer's
own settings, which the schema checks too (it may be skipped).
*/}}
{{- define "oidc-discovery.validateFleet" -}}
{{- $sources := include "oidc-discovery.keySources" . }}
{{- if $sources }}
{{- fail (printf "issuers: %s does not apply to a fleet: each issuer names its own keys (issuers.NAME.keys.existingSecret or existingConfigMap); the fleet does not mirror API servers or run on the control plane yet" (replace "," " and " $sources)) }}
{{- end }}
{{- if .Values.tokenReview.enabled }}
{{- fail "issuers: tokenReview.enabled is not available for a fleet yet (the server's TokenReview API is not per issuer yet): disable one of them" }}
{{- end }}
{{- if .Values.jwksUri }}
{{- fail "issuers: jwksUri is one issuer's; set issuers.NAME.jwksUri per issuer instead" }}
{{- end }}
{{- if .Values.pathPrefix }}
{{- fail "issuers: pathPrefix does not apply to a fleet: each issuer is served under its own URL's path" }}
{{- end }}
{{- $urls := dict }}
{{- range $name, $is := .Values.issuers }}
{{- if not (regexMatch "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$" $name) }}
{{- fail (printf "issuers: %q is not an issuer name: letters, digits, '-', '_' and '.', not starting with '.', at most 200 characters" $name) }}
{{- end }}
{{- if not (kindIs "map" $is) }}
{{- fail (printf "issuers.%s: give the issuer's settings (at least serviceAccountIssuer and keys)" $name) }}
{{- end }}
{{- if not $is.serviceAccountIssuer }}
{{- fail (printf "issuers.%s.serviceAccountIssuer is required: that cluster's kube-apiserver --service-account-issuer" $name) }}
{{- end }}
{{- with get $urls $is.serviceAccountIssuer }}
{{- fail (printf "issuers.%s and issuers.%s have one serviceAccountIssuer, %s: the server would refuse both" . $name $is.serviceAccountIssuer) }}
{{- end }}
{{- $_ := set $urls $is.serviceAccountIssuer $name }}
{{- $k := $is.keys | default dict }}
{{- if eq (len (compact (list $k.existingSecret $k.existingConfigMap))) 1 | not }}
{{- fail (printf "issuers.%s.keys: give exactly one of existingSecret or existingConfigMap (the Secret or ConfigMap holding that cluster's sa.pub)" $name) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Where a fleet's issuer files are mounted (a ConfigMap volume, --issuers-dir).
*/}}
{{- define "oidc-discovery.issuersDir" -}}
/issuers
{{- end }}

{{/*
The volumes of a fleet's key sources, one per Secret or ConfigMap however
many issuers share it, as a dict: volume name -> {kind, name, path}. The
volume name is a hash of the source, so adding or removing another source
leaves each volume's name (and mount) as it was.
*/}}
{{- define "oidc-discovery.issuerKeySources" -}}
{{- $out := dict }}
{{- range $name, $is := .Values.issuers }}
{{- $src := include "oidc-discovery.issuerKeySource" $is.keys | fromJson }}
{{- $_ := set $out $src.volume $src }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/*
One issuer's key source (its keys value) as JSON: {kind: secret or
configMap, name, path: where it is mounted, volume: the volume's name}.
*/}}
{{- define "oidc-discovery.issuerKeySource" -}}
{{- $kind := ternary "secret" "configMap" (not (empty .existingSecret)) }}
{{- $name := default .existingConfigMap .existingSecret }}
{{- $id := printf "%s/%s" (lower $kind) $name }}
{{- dict "kind" $kind "name" $name "path" (printf "/issuer-keys/%s" $id) "volume" (printf "issuer-keys-%s" (sha256sum $id | trunc 12)) | toJson }}
{{- end }}

{{/*
One issuer's file (a dict of issuer settings) as the server reads it: the
per-issuer flags without their dashes. maxAge and keyRetention left out are
the command line's (the chart's maxAge and keyRetention).
*/}}
{{- define "oidc-discovery.issuerFile" -}}
{{- $src := include "oidc-discovery.issuerKeySource" .keys | fromJson }}
{{- $keys := $src.path }}
{{- with .keys.key }}
{{- $keys = printf "%s/%s" $keys . }}
{{- end }}
{{- $f := dict "service-account-issuer" .serviceAccountIssuer "service-account-key-file" $keys }}
{{- with .jwksUri }}
{{- $_ := set $f "service-account-jwks-uri" . }}
{{- end }}
{{- if not (kindIs "invalid" .maxAge) }}
{{- $_ := set $f "max-age" (int64 .maxAge) }}
{{- end }}
{{- if not (kindIs "invalid" .keyRetention) }}
{{- $_ := set $f "key-retention" (toString .keyRetention) }}
{{- end }}
{{- with .apiAudiences }}
{{- $_ := set $f "api-audiences" (join "," .) }}
{{- end }}
{{- toJson $f }}
{{- end }}

{{/*
The TokenReview API answers only over TLS and only the callers named, as the
server itself insists (it would not start): say so at render time, naming
the values.
*/}}
{{- define "oidc-discovery.validateTokenReview" -}}
{{- $tr := .Values.tokenReview }}
{{- if $tr.enabled }}
{{- if not $tr.tls.existingSecret }}
{{- fail "tokenReview.enabled needs tokenReview.tls.existingSecret: a kubernetes.io/tls Secret for the TokenReview listener (callers send bearer tokens; the API is never served over plain HTTP by this chart)" }}
{{- end }}
{{- if not $tr.allowedCallers }}
{{- fail "tokenReview.enabled needs tokenReview.allowedCallers: nobody may call the TokenReview API otherwise (e.g. [system:serviceaccount:vault:vault-auth])" }}
{{- end }}
{{- if and $tr.checkBoundObjects (not (include "oidc-discovery.apiserver" $)) }}
{{- fail "tokenReview.checkBoundObjects needs the keys from the API server (keys.source apiserver, the default): the bound objects are looked up there" }}
{{- end }}
{{- range $tr.allowedCallers }}
{{- if and (contains "=" .) (not $tr.clientCA.existingSecret) }}
{{- fail (printf "tokenReview.allowedCallers %q is a certificate subject, which needs tokenReview.clientCA.existingSecret" .) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The path the documents are served under: pathPrefix, or by default the
issuer's path without a trailing slash; "/" means none. Empty for none,
and for a fleet (each issuer is served under its own URL's path).
*/}}
{{- define "oidc-discovery.pathPrefix" -}}
{{- if .Values.issuers }}
{{- else if eq .Values.pathPrefix "/" }}
{{- else if .Values.pathPrefix }}
{{- .Values.pathPrefix }}
{{- else }}
{{- trimSuffix "/" (urlParse .Values.issuer).path }}
{{- end }}
{{- end }}

{{/*
The container's arguments, as a YAML list.
*/}}
{{- define "oidc-discovery.args" -}}
{{- $args := list "serve" "--service-account-issuer" .Values.issuer }}
{{- if .Values.issuers }}
{{- $args = list "serve" "--issuers-dir" (include "oidc-discovery.issuersDir" .) }}
{{- end }}
{{- if .Values.jwksUri }}
{{- $args = concat $args (list "--service-account-jwks-uri" .Values.jwksUri) }}
{{- end }}
{{- if include "oidc-discovery.apiserver" . }}
{{- $sa := include "oidc-discovery.podServiceAccountDir" . }}
{{- $args = concat $args (list "--upstream" "in-cluster" "--upstream-token-file" (printf "%s/token" $sa) "--upstream-ca-file" (printf "%s/ca.crt" $sa)) }}
{{- $args = concat $args (list "--upstream-refresh-interval" (toString .Values.keys.apiserver.refreshInterval)) }}
{{- with .Values.keys.apiserver.maxStaleness }}
{{- $args = concat $args (list "--upstream-max-staleness" (toString .)) }}
{{- end }}
{{- else if .Values.keys.controlPlane.enabled }}
{{- $args = concat $args (list "--service-account-key-file" (printf "/keys/%s" (base .Values.keys.controlPlane.hostPath))) }}
{{- else if not .Values.issuers }}
{{- $args = concat $args (list "--service-account-key-file" "/keys") }}
{{- end }}
{{- $args = concat $args (list "--listen" "0.0.0.0:8080" "--admin-listen" "0.0.0.0:9090") }}
{{- if .Values.tls.existingSecret }}
{{- $args = concat $args (list "--tls-listen" "0.0.0.0:8443" "--tls-cert-file" "/tls/tls.crt" "--tls-private-key-file" "/tls/tls.key") }}
{{- end }}
{{- if .Values.tokenReview.enabled }}
{{- $args = concat $args (list "--enable-token-review" "--token-review-listen" "0.0.0.0:8081") }}
{{- $args = concat $args (list "--token-review-tls-cert-file" "/tokenreview-tls/tls.crt" "--token-review-tls-private-key-file" "/tokenreview-tls/tls.key") }}
{{- if .Values.tokenReview.clientCA.existingSecret }}
{{- $args = concat $args (list "--token-review-client-ca-file" "/tokenreview-client-ca/ca.crt") }}
{{- end }}
{{- range .Values.tokenReview.allowedCallers }}
{{- $args = concat $args (list "--token-review-allowed-callers" .) }}
{{- end }}
{{- with .Values.tokenReview.callerAudiences }}
{{- $args = concat $args (list "--token-review-caller-audiences" (join "," .)) }}
{{- end }}
{{- with .Values.tokenReview.apiAudiences }}
{{- $args = concat $args (list "--api-audiences" (join "," .)) }}
{{- end }}
{{- if .Values.tokenReview.acceptLegacyTokens }}
{{- $args = concat $args (list "--accept-legacy-tokens") }}
{{- end }}
{{- if .Values.tokenReview.checkBoundObjects }}
{{- $args = concat $args (list "--token-review-check-bound-objects" "--token-review-bound-object-cache-ttl" (toString .Values.tokenReview.boundObjectCacheTTL)) }}
{{- end }}
{{- end }}
{{- $args = concat $args (list "--max-age" (toString (int64 .Values.maxAge))) }}
{{- /* A subdirectory the server creates with mode 0700: the emptyDir itself is world-writable, which --state-dir refuses */}}
{{- $args = concat $args (list "--state-dir" "/state/data") }}
{{- if ne (toString .Values.keyRetention) "0" }}
{{- $args = concat $args (list "--key-retention" (toString .Values.keyRetention)) }}
{{- end }}
{{- with include "oidc-discovery.pathPrefix" . }}
{{- $args = concat $args (list "--path-prefix" .) }}
{{- end }}
{{- if not (kindIs "invalid" .Values.threads) }}
{{- $args = concat $args (list "--threads" (toString (int64 .Values.threads))) }}
{{- end }}
{{- $args = concat $args (list "--log-level" .Values.logLevel "--log-format" .Values.logFormat) }}
{{- $args = concat $args .Values.extraArgs }}
{{- toYaml $args }}
{{- end }}

{{/*
The pod template shared by the Deployment and the DaemonSet.
*/}}
{{- define "oidc-discovery.podTemplate" -}}
{{- $cp := .Values.keys.controlPlane.enabled -}}
{{- $apiserver := include "oidc-discovery.apiserver" . -}}
metadata:
  labels:
    {{- include "oidc-discovery.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with .Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  serviceAccountName: {{ include "oidc-discovery.serviceAccountName" . }}
  automountServiceAccountToken: false
  enableServiceLinks: false
  terminationGracePeriodSeconds: {{ int64 .Values.terminationGracePeriodSeconds }}
  {{- with .Values.priorityClassName }}
  priorityClassName: {{ . }}
  {{- end }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- $podSC := deepCopy .Values.podSecurityContext }}
  {{- if and $cp .Values.keys.controlPlane.runAsRoot }}
  {{- $_ := set $podSC "runAsNonRoot" false }}
  {{- $_ := set $podSC "runAsUser" 0 }}
  {{- $_ := set $podSC "runAsGroup" 0 }}
  {{- $_ := set $podSC "fsGroup" 0 }}
  {{- end }}
  securityContext:
    {{- toYaml $podSC | nindent 4 }}
  containers:
    - name: oidc-discovery
      image: {{ include "oidc-discovery.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args:
        {{- include "oidc-discovery.args" . | nindent 8 }}
      ports:
        - name: http
          containerPort: 8080
          protocol: TCP
        {{- if .Values.tls.existingSecret }}
        - name: https
          containerPort: 8443
          protocol: TCP
        {{- end }}
        {{- if .Values.tokenReview.enabled }}
        - name: tokenreview
          containerPort: 8081
          protocol: TCP
        {{- end }}
        - name: admin
          containerPort: 9090
          protocol: TCP
      {{- with .Values.livenessProbe }}
      livenessProbe:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.readinessProbe }}
      readinessProbe:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      volumeMounts:
        {{- if $apiserver }}
        - name: apiserver-access
          mountPath: {{ include "oidc-discovery.podServiceAccountDir" . }}
          readOnly: true
        {{- else if $cp }}
        - name: keys
          mountPath: {{ printf "/keys/%s" (base .Values.keys.controlPlane.hostPath) }}
          readOnly: true
        {{- else if .Values.issuers }}
        - name: issuers
          mountPath: {{ include "oidc-discovery.issuersDir" . }}
          readOnly: true
        {{- range $volume, $src := include "oidc-discovery.issuerKeySources" . | fromJson }}
        - name: {{ $volume }}
          mountPath: {{ $src.path }}
          readOnly: true
        {{- end }}
        {{- else }}
        - name: keys
          mountPath: /keys
          readOnly: true
        {{- end }}
        {{- if .Values.tls.existingSecret }}
        - name: tls
          mountPath: /tls
          readOnly: true
        {{- end }}
        {{- if .Values.tokenReview.enabled }}
        - name: tokenreview-tls
          mountPath: /tokenreview-tls
          readOnly: true
        {{- if .Values.tokenReview.clientCA.existingSecret }}
        - name: tokenreview-client-ca
          mountPath: /tokenreview-client-ca
          readOnly: true
        {{- end }}
        {{- end }}
        - name: state
          mountPath: /state
  volumes:
    {{- if $apiserver }}
    # The pod's own service-account token, mounted only in this mode:
    # projected (bound to the pod, short-lived, rotated by the kubelet,
    # which the server follows by reading the file before every request),
    # and the cluster CA that signs the API server's certificate.
    - name: apiserver-access
      projected:
        defaultMode: 0444
        sources:
          - serviceAccountToken:
              path: token
              expirationSeconds: {{ int64 .Values.keys.apiserver.tokenExpirationSeconds }}
          - configMap:
              name: kube-root-ca.crt
              items:
                - key: ca.crt
                  path: ca.crt
    {{- else if .Values.issuers }}
    # The fleet's issuer files: a ConfigMap volume, whose updates the
    # kubelet swaps in (..data) and the server follows without a restart.
    - name: issuers
      configMap:
        name: {{ include "oidc-discovery.issuersConfigMapName" . }}
        defaultMode: 0444
    {{- range $volume, $src := include "oidc-discovery.issuerKeySources" . | fromJson }}
    - name: {{ $volume }}
      {{- if eq $src.kind "secret" }}
      secret:
        secretName: {{ $src.name }}
      {{- else }}
      configMap:
        name: {{ $src.name }}
      {{- end }}
        defaultMode: 0444
    {{- end }}
    {{- else }}
    - name: keys
      {{- if $cp }}
      hostPath:
        path: {{ .Values.keys.controlPlane.hostPath }}
        type: File
      {{- else if .Values.keys.existingSecret }}
      secret:
        secretName: {{ .Values.keys.existingSecret }}
        defaultMode: 0444
      {{- else }}
      configMap:
        name: {{ .Values.keys.existingConfigMap }}
        defaultMode: 0444
      {{- end }}
    {{- end }}
    {{- if .Values.tls.existingSecret }}
    - name: tls
      secret:
        secretName: {{ .Values.tls.existingSecret }}
        defaultMode: 0440
    {{- end }}
    {{- if .Values.tokenReview.enabled }}
    - name: tokenreview-tls
      secret:
        secretName: {{ .Values.tokenReview.tls.existingSecret }}
        defaultMode: 0440
    {{- if .Values.tokenReview.clientCA.existingSecret }}
    - name: tokenreview-client-ca
      secret:
        secretName: {{ .Values.tokenReview.clientCA.existingSecret }}
        defaultMode: 0444
        items:
          - key: ca.crt
            path: ca.crt
    {{- end }}
    {{- end }}
    - name: state
      emptyDir:
        {{- if .Values.state.sizeLimit }}
        sizeLimit: {{ .Values.state.sizeLimit }}
        {{- else }} {}
        {{- end }}
  {{- $nodeSelector := .Values.nodeSelector }}
  {{- if $cp }}
  {{- $nodeSelector = merge (deepCopy .Values.nodeSelector) .Values.keys.controlPlane.nodeSelector }}
  {{- end }}
  {{- with $nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- $tolerations := .Values.tolerations }}
  {{- if $cp }}
  {{- $tolerations = concat .Values.keys.controlPlane.tolerations .Values.tolerations }}
  {{- end }}
  {{- with $tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if not $cp }}
  topologySpreadConstraints:
    {{- if .Values.topologySpreadConstraints }}
    {{- toYaml .Values.topologySpreadConstraints | nindent 4 }}
    {{- else }}
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      labelSelector:
        matchLabels:
          {{- include "oidc-discovery.selectorLabels" . | nindent 10 }}
    {{- end }}
  {{- end }}
{{- end }}

{{/*
The ConfigMap of a fleet's issuer files: <fullname>-issuers.
*/}}
{{- define "oidc-discovery.issuersConfigMapName" -}}
{{- printf "%s-issuers" (include "oidc-discovery.fullname" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{/*
What the Ingress routes, as a JSON list of {host, prefixes}: the paths the
documents are served under, per host. One issuer: ingress.hosts (default
its host) and pathPrefix. A fleet: each issuer's path on its host, or on
every host of ingress.hosts when given.
*/}}
{{- define "oidc-discovery.ingressRules" -}}
{{- $byHost := dict }}
{{- if .Values.issuers }}
{{- range $name, $is := .Values.issuers }}
{{- $u := urlParse $is.serviceAccountIssuer }}
{{- range (default (list (regexReplaceAll ":[0-9]+$" $u.host "")) $.Values.ingress.hosts) }}
{{- $_ := set $byHost . (append (get $byHost . | default list) (trimSuffix "/" $u.path) | uniq) }}
{{- end }}
{{- end }}
{{- else }}
{{- $prefix := include "oidc-discovery.pathPrefix" . }}
{{- range (default (list (regexReplaceAll ":[0-9]+$" (urlParse .Values.issuer).host "")) .Values.ingress.hosts) }}
{{- $_ := set $byHost . (list $prefix) }}
{{- end }}
{{- end }}
{{- $rules := list }}
{{- range $host, $prefixes := $byHost }}
{{- $rules = append $rules (dict "host" $host "prefixes" (sortAlpha $prefixes)) }}
{{- end }}
{{- toJson $rules }}
{{- end }}
