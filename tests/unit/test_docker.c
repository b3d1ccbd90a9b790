/* SPDX-License-Identifier: MIT */
/* test_docker.c - the docker backend's pure parts without an engine: the log demultiplexer
 * (frame headers split anywhere, the nonce-marked report lines taken out, forged or malformed
 * ones passed on as output), the create body (every wall, every time), the embedded bootstrap's
 * bounds, DOCKER_HOST parsing and the /_ping header parser. The engine-facing parts are tested end
 * to end in tests/integration/docker.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* docker.c's statics (the options, the create body) are the unit under test; the
 * demultiplexer and the /_ping header parser come from docker.h. */
#include "../../lib/backends/docker.c"

#define NONCE "0123456789abcdef0123456789abcdef"

static void logs_init(struct logs *l, const struct execbox_request *req)
{
    memset(l, 0, sizeof(*l));
    l->req = req;
    l->cancel_fd = -1;
    l->kill_at = 1 << 20;
    eb_capbuf_init(&l->buf[0], 1000);
    eb_capbuf_init(&l->buf[1], 1000);
    snprintf(l->marker, sizeof(l->marker),
             "\x1e"
             "EXECBOX %s ",
             NONCE);
}

static void logs_fini(struct logs *l)
{
    eb_capbuf_free(&l->buf[0]);
    eb_capbuf_free(&l->buf[1]);
    for (size_t i = 0; i < l->n_files; i++) {
        free(l->files[i].path);
        free(l->files[i].mime);
    }
    free(l->files);
}

/* Appends one frame to out. */
static size_t frame(char *out, int stream, const char *payload)
{
    size_t n = strlen(payload);
    out[0] = (char)stream;
    out[1] = out[2] = out[3] = 0;
    out[4] = (char)(n >> 24);
    out[5] = (char)(n >> 16);
    out[6] = (char)(n >> 8);
    out[7] = (char)n;
    memcpy(out + 8, payload, n);
    return n + 8;
}

/* Feeds data to the demultiplexer in pieces of `step` bytes. */
static void feed(struct logs *l, const char *data, size_t len, size_t step)
{
    for (size_t off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;
        assert_int_equal(dk_logs_write((char *)data + off, 1, n, l), n);
    }
}

static char *finish_stream(struct logs *l, int which)
{
    char *s = NULL;
    size_t n = 0;
    assert_int_equal(eb_capbuf_finish(&l->buf[which], &s, &n), 0);
    return s;
}

static void test_demux_any_split(void **state)
{
    (void)state;
    char data[4096];
    size_t n = 0;
    n += frame(data + n, 1, "hello ");
    n += frame(data + n, 2, "oops\n");
    n += frame(data + n, 1, "world\n");
    n += frame(data + n, 2, "partial");
    n += frame(data + n, 2,
               "\x1e"
               "EXECBOX " NONCE " F 3 642f612e706e67\n");
    n += frame(data + n, 2,
               "\x1e"
               "EXECBOX " NONCE " S 137 9 1 1500 2048 0\n");
    for (size_t step = 1; step <= n; step++) {
        struct execbox_request req = {0};
        struct logs l;
        logs_init(&l, &req);
        feed(&l, data, n, step);
        _cleanup_free_ char *out = finish_stream(&l, 0);
        _cleanup_free_ char *err = finish_stream(&l, 1);
        assert_string_equal(out, "hello world\n");
        assert_string_equal(err, "oops\npartial");
        assert_true(l.status.have);
        assert_int_equal(l.status.code, 137);
        assert_int_equal(l.status.sig, 9);
        assert_true(l.status.oom);
        assert_int_equal(l.status.cpu_us, 1500);
        assert_int_equal(l.status.maxrss_kb, 2048);
        assert_int_equal(l.n_files, 1);
        assert_string_equal(l.files[0].path, "d/a.png");
        assert_string_equal(l.files[0].mime, "image/png");
        assert_int_equal(l.files[0].size, 3);
        logs_fini(&l);
    }
}

static void test_marker_in_one_frame_with_output_before(void **state)
{
    (void)state;
    /* The guest's unterminated line and the report read by the engine in one go. */
    char data[512];
    size_t n = frame(data, 2,
                     "tail\x1e"
                     "EXECBOX " NONCE " S 0 0 0 10 20 1\nafter");
    struct execbox_request req = {0};
    struct logs l;
    logs_init(&l, &req);
    feed(&l, data, n, n);
    _cleanup_free_ char *err = finish_stream(&l, 1);
    assert_string_equal(err, "tailafter");
    assert_true(l.status.have);
    assert_true(l.files_truncated);
    logs_fini(&l);
}

static void test_marker_after_a_large_frame_of_output(void **state)
{
    (void)state;
    /* The program's last 9,000 bytes of stderr and the report, coalesced by the engine into
     * one frame larger than DK_HOLD_MAX: the report is still taken out, the output counted. */
    static char payload[9200], data[9300];
    memset(payload, 'e', 9000);
    snprintf(payload + 9000, sizeof(payload) - 9000,
             "\x1e"
             "EXECBOX " NONCE " S 3 0 0 10 20 0\n");
    size_t n = frame(data, 2, payload);
    const size_t steps[] = {1, 7, 4096, 4104, n};
    for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
        struct execbox_request req = {0};
        struct logs l;
        logs_init(&l, &req);
        feed(&l, data, n, steps[k]);
        assert_true(l.status.have);
        assert_int_equal(l.status.code, 3);
        assert_int_equal(l.buf[1].total, 9000);
        logs_fini(&l);
    }
}

static void test_forged_and_malformed_markers_are_output(void **state)
{
    (void)state;
    const char *bad[] = {
        "\x1e"
        "EXECBOX ffffffffffffffffffffffffffffffff S 0 0 1 0 0 0\n", /* wrong nonce */
        "\x1e"
        "EXECBOX " NONCE " S 0 0 1 0\n", /* too few fields */
        "\x1e"
        "EXECBOX " NONCE " S 0 0 1 0 0 0 junk\n", /* trailing junk */
        "\x1e"
        "EXECBOX " NONCE " F 3 6g\n", /* not hex */
        "\x1e"
        "EXECBOX " NONCE " F 3 6100\n", /* a NUL in the path */
        "\x1e"
        "EXECBOX " NONCE " S 0 0 1 0 0 0", /* no newline */
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        char data[512];
        size_t n = frame(data, 2, bad[i]);
        struct execbox_request req = {0};
        struct logs l;
        logs_init(&l, &req);
        feed(&l, data, n, 7);
        _cleanup_free_ char *err = finish_stream(&l, 1);
        assert_string_equal(err, bad[i]);
        assert_false(l.status.have);
        assert_int_equal(l.n_files, 0);
        logs_fini(&l);
    }
}

static void test_after_status_nothing_is_taken(void **state)
{
    (void)state;
    char data[512];
    size_t n = frame(data, 2,
                     "\x1e"
                     "EXECBOX " NONCE " S 0 0 0 0 0 0\n");
    n += frame(data + n, 2,
               "\x1e"
               "EXECBOX " NONCE " S 1 0 1 0 0 0\n");
    struct execbox_request req = {0};
    struct logs l;
    logs_init(&l, &req);
    feed(&l, data, n, n);
    _cleanup_free_ char *err = finish_stream(&l, 1);
    assert_int_equal(l.status.code, 0); /* the first report stands */
    assert_non_null(strstr(err, "S 1 0 1"));
    logs_fini(&l);
}

static void test_flood_stops_the_stream(void **state)
{
    (void)state;
    struct execbox_request req = {0};
    struct logs l;
    logs_init(&l, &req);
    l.kill_at = 100;
    char big[300];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    char data[512];
    size_t n = frame(data, 1, big);
    assert_int_equal(dk_logs_write(data, 1, n, &l), 0); /* aborts the transfer */
    assert_true(l.flooded);
    assert_int_equal(l.buf[0].total, 299);
    logs_fini(&l);
}

static void test_create_body_has_every_wall(void **state)
{
    (void)state;
    struct docker_state s;
    struct execbox_executor_options o = {.docker_host = "unix:///x.sock",
                                         .docker_runtime = "runsc"};
    assert_int_equal(parse_options(&o, &s, NULL), 0);
    struct execbox_policy p;
    execbox_policy_init(&p);
    p.memory = 64 << 20;
    p.pids = 16;
    p.cpus = 0.5;
    struct execbox_request req = {.code = "print(1)", .stdin_data = "in", .stdin_len = 2};
    struct eb_run run = {.req = &req,
                         .policy = &p,
                         .lang = eb_language_find("python"),
                         .code = req.code,
                         .code_len = 8};
    _cleanup_free_ char *body = NULL;
    assert_int_equal(create_body(&s, &run, NONCE, &body, NULL), 0);
    json_t *j = json_loads(body, 0, NULL);
    assert_non_null(j);
    json_t *hc = json_object_get(j, "HostConfig");
    assert_string_equal(json_string_value(json_object_get(hc, "NetworkMode")), "none");
    assert_int_equal(json_integer_value(json_object_get(hc, "Memory")), 64 << 20);
    assert_int_equal(json_integer_value(json_object_get(hc, "MemorySwap")), 64 << 20);
    assert_int_equal(json_integer_value(json_object_get(hc, "NanoCpus")), 500000000);
    assert_int_equal(json_integer_value(json_object_get(hc, "PidsLimit")), 16);
    assert_true(json_is_true(json_object_get(hc, "ReadonlyRootfs")));
    assert_string_equal(json_string_value(json_array_get(json_object_get(hc, "CapDrop"), 0)),
                        "ALL");
    assert_string_equal(json_string_value(json_array_get(json_object_get(hc, "SecurityOpt"), 0)),
                        "no-new-privileges");
    assert_string_equal(json_string_value(json_object_get(hc, "Runtime")), "runsc");
    assert_non_null(strstr(json_string_value(json_object_get(json_object_get(hc, "Tmpfs"), "/tmp")),
                           "size=67108864"));
    assert_non_null(json_object_get(json_object_get(hc, "Tmpfs"), "/workspace"));
    const char *names[] = {"nofile", "fsize", "core", "stack", "nproc"};
    json_t *ul = json_object_get(hc, "Ulimits");
    assert_int_equal(json_array_size(ul), ARRAY_SIZE(names));
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(ul, i), "Name")),
                            names[i]);
    assert_string_equal(json_string_value(json_object_get(j, "User")), "65534:65534");
    /* The program travels in the Env, base64, never through a shell. */
    json_t *env = json_object_get(j, "Env");
    bool code = false, in = false, nonce = false;
    for (size_t i = 0; i < json_array_size(env); i++) {
        const char *e = json_string_value(json_array_get(env, i));
        code |= strcmp(e, "EXECBOX_CODE_0=cHJpbnQoMSk=") == 0;
        in |= strcmp(e, "EXECBOX_STDIN_0=aW4=") == 0;
        nonce |= strcmp(e, "EXECBOX_NONCE=" NONCE) == 0;
    }
    assert_true(code && in && nonce);
    json_t *cmd = json_object_get(j, "Cmd");
    assert_string_equal(json_string_value(json_array_get(cmd, 2)), "-c");
    assert_string_equal(json_string_value(json_array_get(cmd, 3)), eb_docker_bootstrap);
    assert_string_equal(json_string_value(json_array_get(cmd, 4)), "/usr/bin/python3");
    json_decref(j);
}

/* The bootstrap (lib/lang/python_docker.py) lists /workspace within lib/base/limits.h's bounds, as
 * lib/ws/workspace.c does for the other backends: its literals must follow the C constants. */
static void test_bootstrap_limits(void **state)
{
    (void)state;
    char want[64];
    assert_non_null(strstr(eb_docker_bootstrap, "# SPDX-License-Identifier: MIT\n"));
    snprintf(want, sizeof(want), "if len(fl)>=%d:\n", EB_FILES_MAX);
    assert_non_null(strstr(eb_docker_bootstrap, want));
    snprintf(want, sizeof(want), " and depth<%d and ", EB_FILES_DEPTH);
    assert_non_null(strstr(eb_docker_bootstrap, want));
    /* The last line: the guest's status is the container's. */
    static const char last[] = "\nsys.exit(code)\n";
    size_t n = strlen(eb_docker_bootstrap);
    assert_true(n > sizeof(last));
    assert_string_equal(eb_docker_bootstrap + n - (sizeof(last) - 1), last);
}

static void test_docker_host_forms(void **state)
{
    (void)state;
    struct docker_state s;
    struct execbox_error e;
    struct execbox_executor_options o = {.docker_host = "unix:///run/podman/podman.sock"};
    assert_int_equal(parse_options(&o, &s, &e), 0);
    assert_string_equal(s.socket, "/run/podman/podman.sock");
    assert_string_equal(s.root, "http://localhost");
    assert_string_equal(s.image, DK_DEFAULT_IMAGE);
    o.docker_host = "tcp://10.0.0.2:2375";
    assert_int_equal(parse_options(&o, &s, &e), 0);
    assert_string_equal(s.socket, "");
    assert_string_equal(s.root, "http://10.0.0.2:2375");
    o.docker_host = "ssh://host";
    assert_int_equal(parse_options(&o, &s, &e), -EINVAL);
    o.docker_host = "unix://relative";
    assert_int_equal(parse_options(&o, &s, &e), -EINVAL);
    o.docker_host = "unix:///x";
    o.docker_image = "evil?x=1";
    assert_int_equal(parse_options(&o, &s, &e), -EINVAL);
    o.docker_image = "docker.io/library/python:3.12-slim";
    assert_int_equal(parse_options(&o, &s, &e), 0);
}

static void test_ping_headers(void **state)
{
    (void)state;
    struct ping_headers h = {"", ""};
    char l1[] = "Api-Version: 1.43\r\n", l2[] = "server:   Docker/24.0.7 (linux)\r\n",
         l3[] = "Content-Length: 2\r\n";
    dk_ping_header(l1, 1, strlen(l1), &h);
    dk_ping_header(l2, 1, strlen(l2), &h);
    dk_ping_header(l3, 1, strlen(l3), &h);
    assert_string_equal(h.api, "1.43");
    assert_string_equal(h.server, "Docker/24.0.7 (linux)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demux_any_split),
        cmocka_unit_test(test_marker_in_one_frame_with_output_before),
        cmocka_unit_test(test_marker_after_a_large_frame_of_output),
        cmocka_unit_test(test_forged_and_malformed_markers_are_output),
        cmocka_unit_test(test_after_status_nothing_is_taken),
        cmocka_unit_test(test_flood_stops_the_stream),
        cmocka_unit_test(test_create_body_has_every_wall),
        cmocka_unit_test(test_bootstrap_limits),
        cmocka_unit_test(test_docker_host_forms),
        cmocka_unit_test(test_ping_headers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
