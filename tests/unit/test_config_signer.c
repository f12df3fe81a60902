/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests for config/: the signer's flags and --upstream. Error messages
 * are asserted word for word since operators read them; config_test_support.h
 * holds the parse helpers.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/bucket_url.h"
#include "config/checks.h"
#include "config/config.h"
#include "config/file.h"
#include "config/options.h"
#include "util/paths.h"
#include "test_support.h"
#include "config_test_support.h"

#define SIGNER_ARGS "--service-account-issuer", "https://a.example", "--signing-key-dir", "/keys"

Test(config, signer_defaults)
{
    ok(SIGNER_ARGS, NULL);
    cr_assert_eq(cfg.key_files.count, 0, "no key file needed with a signing key directory");
    cr_assert_str_eq(cfg.signing_key_dir, "/keys");
    cr_assert_str_eq(cfg.signing_key_type, "rsa-2048");
    cr_assert_null(cfg.signing_key_import);
    cr_assert_eq(cfg.rotation_period, 30 * 86400);
    cr_assert_eq(cfg.publish_ahead, 86400);
    cr_assert_eq(cfg.max_token_lifetime, 48 * 3600);
    cr_assert_eq(cfg.allow_short_token_lifetime, 0);
    cr_assert_null(cfg.external_signer_listen);
    cr_assert_str_eq(cfg.external_signer_socket_mode, "0600");
    cr_assert_null(cfg.external_signer_socket_owner);
    cr_assert_eq(cfg.external_signer_threads, expected_threads());
    cr_assert_eq(cfg.signer_idle_timeout, 300);
    cr_assert_eq(cfg.signer_max_buffered, 16777216);
    cr_assert_eq(cfg.warnings.count, 0);
}

Test(config, signer_every_flag)
{
    ok(SIGNER_ARGS, "--service-account-key-file", "/sa.pub", "--signing-key-type", "ec-p256", "--signing-key-import",
       "/sa.key", "--rotation-period", "7d", "--publish-ahead", "2h", "--max-token-lifetime", "10m",
       "--external-signer-listen", "unix:/run/signer.sock", "--external-signer-socket-mode", "0660",
       "--external-signer-socket-owner", "kube:kube", "--external-signer-threads", "3",
       "--external-signer-idle-timeout", "30s", "--external-signer-max-buffered-bytes", "1048576", NULL);
    cr_assert_str_eq(cfg.signing_key_type, "ec-p256");
    cr_assert_str_eq(cfg.signing_key_import, "/sa.key");
    cr_assert_eq(cfg.rotation_period, 7 * 86400);
    cr_assert_eq(cfg.publish_ahead, 7200);
    cr_assert_eq(cfg.max_token_lifetime, 600);
    cr_assert_str_eq(cfg.external_signer_listen, "unix:/run/signer.sock");
    cr_assert_str_eq(cfg.external_signer_socket_mode, "0660");
    cr_assert_str_eq(cfg.external_signer_socket_owner, "kube:kube");
    cr_assert_eq(cfg.external_signer_threads, 3);
    cr_assert_eq(cfg.signer_idle_timeout, 30);
    cr_assert_eq(cfg.signer_max_buffered, 1048576);
}

/* Seconds are accepted, for tests that rotate in seconds. */
Test(config, signer_short_periods)
{
    ok(SIGNER_ARGS, "--max-age", "1s", "--publish-ahead", "3s", "--rotation-period", "6s", "--max-token-lifetime", "5s",
       "--allow-short-token-lifetime", NULL);
    cr_assert_eq(cfg.publish_ahead, 3);
    cr_assert_eq(cfg.rotation_period, 6);
    cr_assert_eq(cfg.max_token_lifetime, 5);
    cr_assert_eq(cfg.allow_short_token_lifetime, 1);
    cr_assert_eq(cfg.warnings.count, 1, "less than a minute over --max-age: warned");
    cr_assert(strstr(cfg.warnings.items[0], "--publish-ahead 3s is less than a minute longer than --max-age 1s") &&
                  strstr(cfg.warnings.items[0], "30 s cooldown"),
              "%s", cfg.warnings.items[0]);
}

Test(config, signer_timing_rules)
{
    fails("--publish-ahead 30m is shorter than --max-age 1h: relying parties keep a fetched JWKS that long (go-oidc "
          "until max-age minus 30 s, a cache in front for its own max-age), so a new key would sign tokens they "
          "cannot verify yet; raise --publish-ahead to --max-age plus a minute or more, or lower --max-age",
          SIGNER_ARGS, "--publish-ahead", "30m", NULL);
    ok(SIGNER_ARGS, "--publish-ahead", "1h", NULL);
    cr_assert_eq(cfg.warnings.count, 1, "equal to --max-age: accepted, warned");
    ok(SIGNER_ARGS, "--publish-ahead", "61m", NULL);
    cr_assert_eq(cfg.warnings.count, 0, "a minute over: quiet");
    fails("--rotation-period is shorter than --publish-ahead 1d: a key signs only after it has been published that "
          "long; make the period at least as long",
          SIGNER_ARGS, "--rotation-period", "12h", NULL);
    fails("--max-token-lifetime must be at least 10m: kube-apiserver refuses a signer whose Metadata says less than "
          "600 seconds (--allow-short-token-lifetime accepts it, for tests)",
          SIGNER_ARGS, "--max-token-lifetime", "9m", NULL);
    fails("--max-token-lifetime \"0\": must be a duration between 1s and 3650d (like 90s, 15m, 24h, 7d or plain "
          "seconds)",
          SIGNER_ARGS, "--max-token-lifetime", "0", NULL);
}

Test(config, signer_flags_need_the_directory)
{
    static const char *const needs_dir[][2] = {{"--external-signer-listen", "unix:/s"},
                                               {"--signing-key-import", "/sa.key"},
                                               {"--signing-key-type", "ec-p256"},
                                               {"--rotation-period", "7d"},
                                               {"--publish-ahead", "2h"},
                                               {"--max-token-lifetime", "1h"}};
    char want[CONFIG_ERR_MAX];

    for (size_t i = 0; i < sizeof needs_dir / sizeof needs_dir[0]; i++) {
        snprintf(want, sizeof want, "%s needs --signing-key-dir DIR (the keys this server signs with)",
                 needs_dir[i][0]);
        flag_fails(want, needs_dir[i][0], needs_dir[i][1]);
    }
    fails("--external-signer-socket-mode needs --external-signer-listen unix:PATH", SIGNER_ARGS,
          "--external-signer-socket-mode", "0660", NULL);
    fails("--external-signer-threads needs --external-signer-listen unix:PATH", SIGNER_ARGS,
          "--external-signer-threads", "2", NULL);
    fails("--external-signer-idle-timeout needs --external-signer-listen unix:PATH", SIGNER_ARGS,
          "--external-signer-idle-timeout", "1m", NULL);
    fails("--external-signer-max-buffered-bytes needs --external-signer-listen unix:PATH", SIGNER_ARGS,
          "--external-signer-max-buffered-bytes", "65536", NULL);
    fails("--signing-key-file and --signing-key-dir are mutually exclusive: --signing-key-file watches a key the "
          "API server signs with itself, with --signing-key-dir this server signs (to start signing with that key, "
          "give it as --signing-key-import)",
          SIGNER_ARGS, "--signing-key-file", "/sa.key", NULL);
}

Test(config, signer_value_errors)
{
    fails("--external-signer-listen \"/run/s.sock\": must be unix:/PATH: kube-apiserver's "
          "--service-account-signing-endpoint is a Unix socket",
          SIGNER_ARGS, "--external-signer-listen", "/run/s.sock", NULL);
    fails("--external-signer-listen \"127.0.0.1:9\": must be unix:/PATH: kube-apiserver's "
          "--service-account-signing-endpoint is a Unix socket",
          SIGNER_ARGS, "--external-signer-listen", "127.0.0.1:9", NULL);
    fails("--signing-key-type \"rsa-1024\": must be one of rsa-2048, rsa-3072, ec-p256", SIGNER_ARGS,
          "--signing-key-type", "rsa-1024", NULL);
    fails("--external-signer-socket-mode \"0666\": must be one of 0600, 0660", SIGNER_ARGS, "--external-signer-listen",
          "unix:/s", "--external-signer-socket-mode", "0666", NULL);
    fails("--external-signer-socket-owner \"a:b:c\": must be USER, USER:GROUP or :GROUP (names or numeric ids)",
          SIGNER_ARGS, "--external-signer-listen", "unix:/s", "--external-signer-socket-owner", "a:b:c", NULL);
    ok(SIGNER_ARGS, "--external-signer-listen", "unix:/s", "--external-signer-socket-owner", ":996", NULL);
}

/* keys and export read the directory; keys takes serve's signer flags to
 * check serve's command line, export only the directory. */
Test(config, signer_in_keys_and_export)
{
    ok("keys", "--signing-key-dir", "/keys", "--publish-ahead", "2h", NULL);
    cr_assert_str_eq(cfg.signing_key_dir, "/keys");
    ok("export", "--service-account-issuer", "https://a.example", "--signing-key-dir", "/keys", "--out", "/o", NULL);
    cr_assert_str_eq(cfg.signing_key_dir, "/keys");
    fails("--publish-ahead is not valid for the export command", "export", "--service-account-issuer",
          "https://a.example", "--signing-key-dir", "/keys", "--out", "/o", "--publish-ahead", "2h", NULL);
    fails("--external-signer-listen is not valid for the keys command", "keys", "--signing-key-dir", "/keys",
          "--external-signer-listen", "unix:/s", NULL);
}

Test(config, signer_from_config_file)
{
    write_file("{\"signing-key-dir\": \"/keys\", \"rotation-period\": \"14d\", \"publish-ahead\": 7200, "
               "\"external-signer-listen\": \"unix:/run/s.sock\", \"external-signer-socket-mode\": \"0660\"}");
    ok("--service-account-issuer", "https://a.example", "--config", path, NULL);
    cr_assert_eq(cfg.rotation_period, 14 * 86400);
    cr_assert_eq(cfg.publish_ahead, 7200);
    cr_assert_str_eq(cfg.external_signer_listen, "unix:/run/s.sock");
    cr_assert_str_eq(cfg.external_signer_socket_mode, "0660");
}

/* ------------------------------------------------------------------------ */
/* --upstream: mirroring an API server                                        */

#define UPSTREAM_ARGS "--service-account-issuer", "https://a.example", "--upstream"
#define POD_SA        "/var/run/secrets/kubernetes.io/serviceaccount"

/* An upstream instead of key files, with the defaults of its flags. */
Test(config, upstream_alone_with_defaults)
{
    ok(UPSTREAM_ARGS, "https://api.example:6443", NULL);
    cr_assert_eq(cmd, CONFIG_CMD_SERVE);
    cr_assert_str_eq(cfg.upstream, "https://api.example:6443");
    cr_assert_eq(cfg.key_files.count, 0);
    cr_assert_not(cfg.upstream_in_cluster);
    cr_assert_null(cfg.upstream_ca_file);
    cr_assert_null(cfg.upstream_token_file);
    cr_assert_eq(cfg.upstream_refresh_interval, 60);
    cr_assert_eq(cfg.upstream_timeout, 10);
    cr_assert_eq(cfg.upstream_max_staleness, 600, "ten refresh intervals");
}

Test(config, upstream_with_key_files_and_every_flag)
{
    ok(SERVE_ARGS, "--upstream", "https://rancher.example/k8s/clusters/c-1", "--upstream-ca-file", "/ca.crt",
       "--upstream-token-file", "/token", "--upstream-refresh-interval", "1s", "--upstream-timeout", "2s", NULL);
    list_is(&cfg.key_files, 1, "/k.pub");
    cr_assert_str_eq(cfg.upstream, "https://rancher.example/k8s/clusters/c-1", "a base URL may have a path");
    cr_assert_str_eq(cfg.upstream_ca_file, "/ca.crt");
    cr_assert_str_eq(cfg.upstream_token_file, "/token");
    cr_assert_eq(cfg.upstream_refresh_interval, 1, "1s is accepted (tests need it)");
    cr_assert_eq(cfg.upstream_timeout, 2);
    cr_assert_eq(cfg.upstream_max_staleness, 10, "ten of the refresh intervals given");
    ok(UPSTREAM_ARGS, "https://a:1", "--upstream-refresh-interval", "30s", "--upstream-max-staleness", "30s", NULL);
    cr_assert_eq(cfg.upstream_max_staleness, 30);
}

/* in-cluster is the pod's API server, as client-go finds it: the service
 * environment, and the pod's CA and token unless given. */
Test(config, upstream_in_cluster)
{
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    ok(UPSTREAM_ARGS, "in-cluster", NULL);
    cr_assert_str_eq(cfg.upstream, "https://10.96.0.1:443");
    cr_assert(cfg.upstream_in_cluster);
    cr_assert_str_eq(cfg.upstream_ca_file, POD_SA "/ca.crt");
    cr_assert_str_eq(cfg.upstream_token_file, POD_SA "/token");
    ok(UPSTREAM_ARGS, "in-cluster", "--upstream-token-file", "/t", "--upstream-ca-file", "/c", NULL);
    cr_assert_str_eq(cfg.upstream_token_file, "/t", "a token file given wins");
    cr_assert_str_eq(cfg.upstream_ca_file, "/c");
    setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
    ok(UPSTREAM_ARGS, "in-cluster", NULL);
    cr_assert_str_eq(cfg.upstream, "https://[fd00::1]:443");
    write_file("{\"upstream\": \"in-cluster\", \"upstream-refresh-interval\": \"5s\"}");
    ok("--service-account-issuer", "https://a.example", "--config", path, NULL);
    cr_assert_str_eq(cfg.upstream, "https://[fd00::1]:443", "a config-file key too");
    cr_assert_eq(cfg.upstream_max_staleness, 50);
    unsetenv("KUBERNETES_SERVICE_HOST");
    fails("--upstream in-cluster needs KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, which Kubernetes sets in "
          "every pod; outside a pod give the API server's URL (--upstream https://HOST:PORT)",
          UPSTREAM_ARGS, "in-cluster", NULL);
    /* keys reads the same file, and does not read an upstream */
    ok("keys", "--config", path, "--service-account-key-file", "/k", NULL);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "https", 1);
    fails("--upstream in-cluster: KUBERNETES_SERVICE_HOST \"10.96.0.1\" and KUBERNETES_SERVICE_PORT \"https\" do not "
          "make an https URL; give the API server's URL (--upstream https://HOST:PORT)",
          UPSTREAM_ARGS, "in-cluster", NULL);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    setenv("KUBERNETES_SERVICE_HOST", "a/b", 1);
    fails("--upstream in-cluster: KUBERNETES_SERVICE_HOST \"a/b\" and KUBERNETES_SERVICE_PORT \"443\" do not make an "
          "https URL; give the API server's URL (--upstream https://HOST:PORT)",
          UPSTREAM_ARGS, "in-cluster", NULL);
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
}

Test(config, upstream_refusals)
{
    fails("--upstream \"http://api.example\": must be https (a bearer token is sent there), or in-cluster for this "
          "pod's API server",
          UPSTREAM_ARGS, "http://api.example", NULL);
    fails("--upstream \"http://api.example\": must be https (a bearer token is sent there), or in-cluster for this "
          "pod's API server",
          UPSTREAM_ARGS, "http://api.example", "--allow-insecure-issuer", NULL);
    fails("--upstream \"https://api.example/?x=1\": must not have a query", UPSTREAM_ARGS, "https://api.example/?x=1",
          NULL);
    fails("--upstream \"https://u:p@api.example\": must not contain user information", UPSTREAM_ARGS,
          "https://u:p@api.example", NULL);
    fails("--upstream \"\": must be an https URL", UPSTREAM_ARGS, "", NULL);
    fails("--upstream-timeout needs --upstream", SERVE_ARGS, "--upstream-timeout", "5s", NULL);
    fails("--upstream-token-file needs --upstream", SERVE_ARGS, "--upstream-token-file", "/t", NULL);
    fails("--upstream-refresh-interval needs --upstream", SERVE_ARGS, "--upstream-refresh-interval", "5s", NULL);
    fails("--upstream-max-staleness must be at least --upstream-refresh-interval: /readyz would otherwise fail "
          "between two reads",
          UPSTREAM_ARGS, "https://a:1", "--upstream-refresh-interval", "1m", "--upstream-max-staleness", "59s", NULL);
    fails("--upstream-refresh-interval \"0\": must be a duration between 1s and 1d (like 90s, 15m, 24h, 7d or plain "
          "seconds)",
          UPSTREAM_ARGS, "https://a:1", "--upstream-refresh-interval", "0", NULL);
    fails("--service-account-issuer is required (at least one)", "--upstream", "https://a:1", NULL);
    fails("--upstream is only valid for the serve command", "keys", "--service-account-key-file", "/k", "--upstream",
          "https://a:1", NULL);
    fails("--upstream is not valid for the export command", "export", SERVE_ARGS, "--out", "/o", "--upstream",
          "https://a:1", NULL);
    fails("--upstream is only valid for the serve command", "dev", "--upstream", "https://a:1", NULL);
}

#define ETCD_ARGS                                                                                                      \
    SIGNER_ARGS, "--etcd-servers", "https://10.0.0.1:2379,https://10.0.0.2:2379", "--signing-key-encryption-key-file", \
        "/etc/oidc/seal.key"

Test(config, etcd_defaults_and_every_flag)
{
    ok(SIGNER_ARGS, NULL);
    cr_assert_eq(cfg.etcd_servers.count, 0);
    cr_assert_str_eq(cfg.etcd_prefix, "/oidc-discovery/");
    cr_assert_eq(cfg.etcd_lease_ttl, 15);
    ok(ETCD_ARGS, "--etcd-servers", "http://127.0.0.1:2379/", "--etcd-cafile", "/pki/etcd/ca.crt", "--etcd-certfile",
       "/pki/c.crt", "--etcd-keyfile", "/pki/c.key", "--etcd-prefix", "/registry/oidc/", "--etcd-lease-ttl", "3s",
       NULL);
    cr_assert_eq(cfg.etcd_servers.count, 3);
    cr_assert_str_eq(cfg.etcd_servers.items[1], "https://10.0.0.2:2379");
    cr_assert_str_eq(cfg.etcd_servers.items[2], "http://127.0.0.1:2379/");
    cr_assert_str_eq(cfg.etcd_cafile, "/pki/etcd/ca.crt");
    cr_assert_str_eq(cfg.etcd_certfile, "/pki/c.crt");
    cr_assert_str_eq(cfg.etcd_keyfile, "/pki/c.key");
    cr_assert_str_eq(cfg.etcd_prefix, "/registry/oidc/");
    cr_assert_eq(cfg.etcd_lease_ttl, 3);
    cr_assert_str_eq(cfg.signing_key_encryption_key_file, "/etc/oidc/seal.key");
}

/* etcd keeps the keys only with a local copy and the key that seals
 * them; its other flags only with etcd. */
Test(config, etcd_rules)
{
    fails("--etcd-servers needs --signing-key-encryption-key-file FILE (the private keys are sealed before they "
          "reach etcd)",
          SIGNER_ARGS, "--etcd-servers", "https://10.0.0.1:2379", NULL);
    fails("--etcd-servers needs --signing-key-dir DIR (this node's copy of the keys, to start and sign while etcd is "
          "down)",
          "--service-account-issuer", "https://a.example", "--service-account-key-file", "/k.pub", "--etcd-servers",
          "https://10.0.0.1:2379", "--signing-key-encryption-key-file", "/k", NULL);
    flag_fails("--signing-key-encryption-key-file needs --etcd-servers URL[,URL...]",
               "--signing-key-encryption-key-file", "/k");
    flag_fails("--etcd-prefix needs --etcd-servers URL[,URL...]", "--etcd-prefix", "/x/");
    flag_fails("--etcd-cafile needs --etcd-servers URL[,URL...]", "--etcd-cafile", "/ca");
    flag_fails("--etcd-lease-ttl needs --etcd-servers URL[,URL...]", "--etcd-lease-ttl", "5s");
    fails("--etcd-certfile needs --etcd-keyfile PATH", ETCD_ARGS, "--etcd-certfile", "/c.crt", NULL);
    fails("--etcd-keyfile needs --etcd-certfile PATH", ETCD_ARGS, "--etcd-keyfile", "/c.key", NULL);
}

Test(config, etcd_value_errors)
{
    static const char *const bad_servers[] = {"10.0.0.1:2379",         "https://10.0.0.1:2379/v3", "https://a,",
                                              "unix:///run/etcd.sock", "https://u@h:2379",         "https://h:0"};
    char want[CONFIG_ERR_MAX];

    for (size_t i = 0; i < COUNT(bad_servers); i++) {
        snprintf(want, sizeof(want),
                 "--etcd-servers \"%s\": must be etcd client URLs, comma-separated, each https://HOST:PORT (or "
                 "http://) without a path",
                 bad_servers[i]);
        fails(want, ETCD_ARGS, "--etcd-servers", bad_servers[i], NULL);
    }
    fails("--etcd-prefix \"/oidc\": must start and end with '/' (like /oidc-discovery/), so that no other prefix "
          "overlaps it",
          ETCD_ARGS, "--etcd-prefix", "/oidc", NULL);
    fails("--etcd-prefix \"/a b/\": must be printable ASCII without spaces", ETCD_ARGS, "--etcd-prefix", "/a b/", NULL);
    fails("--etcd-lease-ttl \"1s\": must be a duration between 2s and 5m (like 90s, 15m, 24h, 7d or plain seconds)",
          ETCD_ARGS, "--etcd-lease-ttl", "1s", NULL);
}
