/* SPDX-License-Identifier: MIT */
/* fuzz_docker_logs.c - libFuzzer target for the Docker Engine API's log stream as the docker
 * backend parses it (lib/backends/docker_logs.c: 8-byte frame headers, payloads, the bootstrap's
 * marked status and file lines inside stderr frames): the bytes come from a container the
 * guest controls. The first input byte picks the write size, so frames split anywhere. */
#include <stdint.h>

#include "../../lib/backends/docker_logs.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = (size_t)data[0] % 64 + 1;
    data++;
    size--;
    struct execbox_request req;
    memset(&req, 0, sizeof(req));
    struct logs l;
    memset(&l, 0, sizeof(l));
    l.req = &req;
    l.cancel_fd = -1;
    l.kill_at = 1 << 20;
    eb_capbuf_init(&l.buf[0], 1000);
    eb_capbuf_init(&l.buf[1], 1000);
    snprintf(l.marker, sizeof(l.marker),
             "\x1e"
             "EXECBOX %s ",
             "0123456789abcdef");
    for (size_t off = 0; off < size; off += step) {
        size_t n = size - off < step ? size - off : step;
        if (dk_logs_write((char *)data + off, 1, n, &l) != n)
            break; /* aborted: a flood or no memory */
    }
    for (size_t i = 0; i < l.n_files; i++) {
        free(l.files[i].path);
        free(l.files[i].mime);
    }
    free(l.files);
    eb_capbuf_free(&l.buf[0]);
    eb_capbuf_free(&l.buf[1]);
    return 0;
}
