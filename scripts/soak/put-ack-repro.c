/*
 * Reproducer for the UCX tcp abort a 30-minute soak died of (docs/upstream-reports.md, 5):
 *   tcp_ep.c:939 Assertion `ep->flags & UCT_TCP_EP_FLAG_PUT_TX_WAITING_ACK' failed
 * in uct_tcp_ep_handle_put_ack. Plain UCP, no ucx-ts: it is meant to go with the report to UCX.
 *
 * Two processes, A (the parent) and B (a child), UCX_TLS=tcp on lo, each with an endpoint to
 * the other made by worker address (their tcp lanes share one socket), peer error handling:
 *   1. A sends a small tag message (its tcp lane now needs a flush) and calls ucp_ep_flush_nbx:
 *      the lane sends an empty PUT (sn k) and waits for its ACK. A then stops progressing.
 *   2. B sends a small tag message, then the trigger: in mode "put" (default) it flushes too,
 *      so its empty PUT j goes out; in mode "big-send" it starts a 1 MiB tag send A has a receive
 *      posted for (UCP messages A's UCP answers at once). Then B progresses for 100 ms: it reads
 *      A's PUT k and sends ACK k. A's socket now holds [message][PUT j or UCP message][ACK k].
 *   3. B dies abruptly: SO_LINGER 0 on its sockets, then SIGKILL (a reset, as when a killed
 *      process leaves unread data in its socket).
 *   4. A progresses: one recv() returns those messages; answering the first one fails
 *      (ECONNRESET) -> uct_tcp_ep_handle_disconnected clears PUT_TX_WAITING_ACK; the same parse
 *      loop then handles ACK k, whose sn equals tx.put_sn -> the assertion (abort, exit 134).
 * Controls: "no-put" (B neither flushes nor sends big: no answer to fail) and "no-rst" (B dies
 * without the reset: A's answer is written, nothing fails) must run clean.
 *
 * Without assertions (release builds) A does not abort; the tcp iface's outstanding count is
 * decremented twice. The last lines check that a worker flush still completes (it does: UCP then
 * flushes endpoint by endpoint).
 *
 * Build: cc -O1 -g put-ack-repro.c -o put-ack-repro -lucp -lucs   (-I, -L, -Wl,-rpath for another UCX)
 * Run:   REPRO_MODE=put|big-send|no-put|no-rst ./put-ack-repro [rounds]
 * Or:    npx tsx scripts/soak/put-ack-repro.ts (builds it against the UCX ucx-ts would load, runs every mode)
 */
#define _GNU_SOURCE
#include <ucp/api/ucp.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHECK(x) do { ucs_status_t s_ = (x); if (s_ != UCS_OK) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, ucs_status_string(s_)); exit(2); } } while (0)

static ucp_context_h ctx;
static ucp_worker_h worker;
static ucp_ep_h ep;
static int ep_failed;
static char small_out[64], small_in[64];
static char big_out[1 << 20], big_in[1 << 20];

static void on_ep_error(void *arg, ucp_ep_h e, ucs_status_t status) { (void)arg; (void)e; (void)status; ep_failed = 1; }

static void write_all(int fd, const void *p, size_t n) { if (write(fd, p, n) != (ssize_t)n) { perror("write"); exit(2); } }
static void read_all(int fd, void *p, size_t n) {
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char*)p + got, n - got);
        if (r <= 0) { perror("read"); exit(2); }
        got += (size_t)r;
    }
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void progress_for(double seconds) { for (double end = now() + seconds; now() < end;) ucp_worker_progress(worker); }

static int pending(void *req) { return req != NULL && !UCS_PTR_IS_ERR(req) && ucp_request_check_status(req) == UCS_INPROGRESS; }
static void wait_req(void *req) {
    if (UCS_PTR_IS_ERR(req)) { fprintf(stderr, "request failed: %s\n", ucs_status_string(UCS_PTR_STATUS(req))); exit(2); }
    while (pending(req)) ucp_worker_progress(worker);
    if (req != NULL) ucp_request_free(req);
}

static const ucp_request_param_t no_params = { .op_attr_mask = 0 };
static void *send_tag(void *buf, size_t len, ucp_tag_t tag) { return ucp_tag_send_nbx(ep, buf, len, tag, &no_params); }
static void *recv_tag(void *buf, size_t len, ucp_tag_t tag) { return ucp_tag_recv_nbx(worker, buf, len, tag, (ucp_tag_t)-1, &no_params); }
static void *flush_ep(void) { return ucp_ep_flush_nbx(ep, &no_params); }

/* Worker and an endpoint to the other process (addresses swapped over the pipes), one message
 * each way and a flush: the lanes are wired up and the tcp lane has done a PUT/ACK round. */
static void setup(int from_peer, int to_peer, int parent) {
    ucp_params_t params = { .field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG };
    ucp_worker_params_t wp = { .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE, .thread_mode = UCS_THREAD_MODE_SINGLE };
    ucp_address_t *addr;
    size_t len, peer_len;
    char peer[4096];
    CHECK(ucp_init(&params, NULL, &ctx));
    CHECK(ucp_worker_create(ctx, &wp, &worker));
    CHECK(ucp_worker_get_address(worker, &addr, &len));
    if (parent) { read_all(from_peer, &peer_len, sizeof(peer_len)); read_all(from_peer, peer, peer_len); }
    write_all(to_peer, &len, sizeof(len)); write_all(to_peer, addr, len);
    if (!parent) { read_all(from_peer, &peer_len, sizeof(peer_len)); read_all(from_peer, peer, peer_len); }
    ucp_worker_release_address(worker, addr);
    ucp_ep_params_t ep_params = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = (const ucp_address_t*)peer, .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = { .cb = on_ep_error, .arg = NULL },
    };
    CHECK(ucp_ep_create(worker, &ep_params, &ep));
    void *r = recv_tag(small_in, sizeof(small_in), 1);
    wait_req(send_tag(small_out, sizeof(small_out), 1));
    wait_req(r);
    wait_req(flush_ep());
    progress_for(0.2);
}

/* What a process killed with unread data in its sockets does to them: reset, not close. */
static void sockets_reset_on_close(void) {
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        struct stat st;
        int fd = atoi(e->d_name);
        if (fd > 2 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) {
            struct linger l = { .l_onoff = 1, .l_linger = 0 };
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        }
    }
    if (d != NULL) closedir(d);
}

static void run_b(const char *mode, int from_a, int to_a) {
    char go;
    setup(from_a, to_a, 0);
    write_all(to_a, "r", 1);
    read_all(from_a, &go, 1);                       /* A has flushed and stopped progressing */
    void *s = send_tag(small_out, sizeof(small_out), 1);
    void *t = NULL;
    if (!strcmp(mode, "put") || !strcmp(mode, "no-rst")) t = flush_ep(); /* empty PUT j */
    else if (!strcmp(mode, "big-send")) t = send_tag(big_out, sizeof(big_out), 2);
    (void)s; (void)t;
    progress_for(0.1);                              /* reads A's PUT k, sends ACK k */
    if (strcmp(mode, "no-rst")) sockets_reset_on_close();
    kill(getpid(), SIGKILL);
    _exit(3);
}

/* Returns 1 when the worker flush after the event did not complete (left running). */
static int run_a(int round, pid_t b, int from_b, int to_b) {
    char ready;
    int status;
    setup(from_b, to_b, 1);
    read_all(from_b, &ready, 1);
    void *r = recv_tag(big_in, sizeof(big_in), 2);  /* for "big-send"; fails once B is gone */
    void *s = send_tag(small_out, sizeof(small_out), 1); /* the lane needs a flush now */
    void *f = flush_ep();                           /* empty PUT k, waiting for its ACK */
    write_all(to_b, "g", 1);
    waitpid(b, &status, 0);                         /* no progress here until B is gone */
    usleep(50 * 1000);
    fprintf(stderr, "round %d: B is gone; A progresses\n", round);
    progress_for(0.3);                              /* the abort, where it happens */
    fprintf(stderr, "round %d: no abort (endpoint error reported: %s)\n", round, ep_failed ? "yes" : "no");
    void *wf = ucp_worker_flush_nbx(worker, &no_params);
    for (double end = now() + 2.0; pending(wf) && now() < end;) ucp_worker_progress(worker);
    int stuck = pending(wf);
    fprintf(stderr, "round %d: worker flush %s\n", round, stuck ? "still in progress after 2 s" : "completed");
    if (stuck) return 1;
    if (wf != NULL && !UCS_PTR_IS_ERR(wf)) ucp_request_free(wf);
    for (void **q = (void*[]){ r, s, f }, **end = q + 3; q < end; q++) {
        if (*q != NULL && !UCS_PTR_IS_ERR(*q)) { if (pending(*q)) ucp_request_cancel(worker, *q); ucp_request_free(*q); }
    }
    ucp_request_param_t close = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE };
    wait_req(ucp_ep_close_nbx(ep, &close));
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    ep_failed = 0;
    return 0;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    const char *mode = getenv("REPRO_MODE") != NULL ? getenv("REPRO_MODE") : "put";
    if (strcmp(mode, "put") && strcmp(mode, "big-send") && strcmp(mode, "no-put") && strcmp(mode, "no-rst")) {
        fprintf(stderr, "REPRO_MODE: put, big-send, no-put or no-rst, not %s\n", mode);
        return 2;
    }
    setenv("UCX_TLS", "tcp", 0);
    setenv("UCX_NET_DEVICES", "lo", 0);
    for (int i = 0; i < rounds; i++) {
        int a2b[2], b2a[2];
        if (pipe(a2b) != 0 || pipe(b2a) != 0) { perror("pipe"); return 2; }
        pid_t b = fork();
        if (b == 0) { close(a2b[1]); close(b2a[0]); run_b(mode, a2b[0], b2a[1]); }
        close(a2b[0]); close(b2a[1]);
        if (run_a(i, b, b2a[0], a2b[1])) return 1;
        close(a2b[1]); close(b2a[0]);
    }
    return 0;
}
