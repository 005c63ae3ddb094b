/* agentgrpo.sandbox._native: the job process's setup in C (Linux) -- the only implementation of it.
 *
 * Every job is forked from the job template, so each page the job's own Python code writes (a refcount, a
 * frame, an argument tuple) costs a copy-on-write page copy, and so does each page the template writes
 * after a fork. Done in Python, the few dozen system calls that set a job up (session, namespaces,
 * scratch, filter, descriptors, limits, uid) copied about a hundred pages per job; these functions make
 * them without touching Python objects in between. There is no second implementation to keep equal:
 * where this module is not built, `agentgrpo.sandbox.pool.Sandbox` refuses to start
 * (`agentgrpo.sandbox.isolation.native_problem`). docs/sandbox.md (Throughput) has the measurements.
 *
 * Every failure raises OSError(errno, "<step>: <strerror>"), like the `os` module.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#define MAX_KEEP 64       /* directories under /tmp bound back into the job's scratch */
#define FIRST_FREE_FD 5   /* 0 stdin, 1 stdout, 2 stderr, 3 requests, 4 replies */

static PyObject *fail(const char *what) {
    int err = errno;
    PyObject *message = PyUnicode_FromFormat("%s: %s", what, strerror(err));
    if (message != NULL) {
        PyObject *args = Py_BuildValue("(iN)", err, message);
        if (args != NULL) {
            PyErr_SetObject(PyExc_OSError, args);
            Py_DECREF(args);
        }
    }
    return NULL;
}

/* mkdir -p, each new directory 0755 (as os.makedirs(path, 0o755, exist_ok=True)) */
static int make_dirs(const char *path) {
    char buffer[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buffer) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buffer, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buffer[i] != '/' && buffer[i] != '\0') continue;
        char saved = buffer[i];
        buffer[i] = '\0';
        if (mkdir(buffer, 0755) != 0 && errno != EEXIST) return -1;
        buffer[i] = saved;
    }
    return 0;
}

/* fork, the child as PID 1 of a new PID namespace if own >= 0 (an fd on our own /proc/self/ns/pid: the
 * caller's later children land there again); -1 with errno set on failure (no child then) */
static pid_t fork_job_process(int own) {
    /* back in our own namespace first: a second unshare is refused until then, and where setns is
     * refused (a user namespace) we learn it before a child exists */
    if (own >= 0 && (setns(own, CLONE_NEWPID) != 0 || unshare(CLONE_NEWPID) != 0)) return -1;
    if (PySys_Audit("os.fork", NULL) < 0) {
        if (own >= 0) setns(own, CLONE_NEWPID);
        errno = 0;
        return -2;  /* the audit hook raised */
    }
    PyOS_BeforeFork();
    pid_t pid = fork();
    int fork_errno = errno;
    if (pid == 0) {
        PyOS_AfterFork_Child();
        return 0;
    }
    PyOS_AfterFork_Parent();
    if (own >= 0 && setns(own, CLONE_NEWPID) != 0) {
        int err = errno;
        if (pid > 0) kill(pid, SIGKILL);  /* never leave a child the next ones could not follow */
        errno = err;
        return -1;
    }
    errno = fork_errno;
    return pid;
}

PyDoc_STRVAR(fork_in_pid_namespace_doc,
"fork_in_pid_namespace(own_namespace_fd) -> pid\n\n"
"Fork (like os.fork) a child that is PID 1 of a new PID namespace; the caller's later children land in its\n"
"own namespace again (setns to own_namespace_fd, an fd on /proc/self/ns/pid). Returns 0 in the child.");

static PyObject *fork_in_pid_namespace(PyObject *self, PyObject *arg) {
    int own = PyLong_AsLong(arg);
    if (own == -1 && PyErr_Occurred()) return NULL;
    pid_t pid = fork_job_process(own);
    if (pid == -2) return NULL;
    if (pid < 0) return fail("fork in a new PID namespace");
    return PyLong_FromLong(pid);
}

static void close_all(const int *fds, int n) {
    int saved = errno;
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0) close(fds[i]);
    errno = saved;
}

static void put_u32(unsigned char *at, unsigned long value) {
    for (int i = 0; i < 4; i++) at[i] = (unsigned char)(value >> (24 - 8 * i));
}

static unsigned long get_u32(const unsigned char *at) {
    return ((unsigned long)at[0] << 24) | ((unsigned long)at[1] << 16) | ((unsigned long)at[2] << 8) | at[3];
}

/* Make a job process with its four pipes and hand it to the worker: b"S" + scratch_mb + pid (4 bytes each,
 * big-endian) on sock with SCM_RIGHTS [pidfd, stdout_r, stderr_r, requests_w, replies_r]. Returns the pid
 * (*pidfd: one of our own, to reap it by), 0 in the child (job_ends: stdout_w, stderr_w, requests_r,
 * replies_w; sock and the worker's ends closed), -1 with a Python exception set. */
static pid_t make_spare(int own, int sock, unsigned long scratch_mb, int *pidfd, int job_ends[4]) {
    int pipes[8] = {-1, -1, -1, -1, -1, -1, -1, -1};  /* out_r, out_w, err_r, err_w, req_r, req_w, rep_r, rep_w */
    for (int i = 0; i < 4; i++) {
        if (pipe2(pipes + 2 * i, O_CLOEXEC) != 0) {
            fail("pipe");
            close_all(pipes, 8);
            return -1;
        }
    }
    int ends[4] = {pipes[1], pipes[3], pipes[4], pipes[7]};
    int worker_ends[5] = {-1, pipes[0], pipes[2], pipes[5], pipes[6]};  /* [0]: the pidfd */
    pid_t pid = fork_job_process(own);
    if (pid == 0) {
        close(sock);  /* so that the job sees end-of-file when the worker closes its ends */
        close_all(worker_ends + 1, 4);
        memcpy(job_ends, ends, sizeof ends);
        return 0;
    }
    close_all(ends, 4);
    if (pid < 0) {
        if (pid == -1) fail("fork");
        close_all(worker_ends + 1, 4);
        return -1;
    }
    worker_ends[0] = (int)syscall(SYS_pidfd_open, pid, 0);
    if (worker_ends[0] < 0) {
        fail("pidfd_open");
        kill(pid, SIGKILL);
        close_all(worker_ends + 1, 4);
        return -1;
    }
    unsigned char message[9] = {'S'};
    put_u32(message + 1, scratch_mb);
    put_u32(message + 5, (unsigned long)pid);
    struct iovec iov = {message, sizeof message};
    union {
        char space[CMSG_SPACE(sizeof worker_ends)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.space;
    msg.msg_controllen = sizeof control.space;
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof worker_ends);
    memcpy(CMSG_DATA(cmsg), worker_ends, sizeof worker_ends);
    ssize_t sent;
    do {
        sent = sendmsg(sock, &msg, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) {
        fail("sendmsg");
        kill(pid, SIGKILL);  /* the worker never got it: it must not wait for its spec forever */
        close_all(worker_ends, 5);
        return -1;
    }
    *pidfd = worker_ends[0];
    close_all(worker_ends + 1, 4);
    return pid;
}

struct child { int pidfd; pid_t pid; };
struct exit_record { pid_t pid; int status; long long cpu_us; };

static int grow(void **items, size_t *capacity, size_t count, size_t size) {
    if (count < *capacity) return 0;
    size_t bigger = *capacity ? 2 * *capacity : 16;
    void *more = realloc(*items, bigger * size);
    if (more == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *items = more;
    *capacity = bigger;
    return 0;
}

static int send_status(int sock, const struct exit_record *record) {
    unsigned char message[17] = {'W'};
    put_u32(message + 1, (unsigned long)record->pid);
    put_u32(message + 5, (unsigned long)record->status);
    unsigned long long cpu = (unsigned long long)record->cpu_us;
    put_u32(message + 9, (unsigned long)(cpu >> 32));
    put_u32(message + 13, (unsigned long)(cpu & 0xffffffffu));
    ssize_t sent;
    do {
        sent = send(sock, message, sizeof message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent < 0) {
        fail("send");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(serve_template_doc,
"serve_template(sock_fd, own_namespace_fd) -> None or (0, job_ends, scratch_mb)\n\n"
"The job template's loop (the same protocol as agentgrpo.sandbox.template's Python loop). Requests on\n"
"sock_fd (SOCK_SEQPACKET): b\"S\" + scratch_mb, or b\"W\" + pid, each 4 bytes big-endian and followed by\n"
"the pids of jobs whose exit status the worker does not need. \"S\": make a job process (as PID 1 of a new\n"
"PID namespace if own_namespace_fd >= 0, else a plain fork) and hand it to the worker: b\"S\" + scratch_mb\n"
"+ pid, with SCM_RIGHTS [pidfd, stdout_r, stderr_r, requests_w, replies_r]. \"W\": answer b\"W\" + pid +\n"
"wait status (4 bytes) + CPU microseconds (8 bytes) once that job has exited. Every job is reaped as\n"
"soon as it exits. Returns None when the worker is gone; in a new job process it returns\n"
"(0, (stdout_w, stderr_w, requests_r, replies_w), scratch_mb).");

static PyObject *serve_template(PyObject *self, PyObject *args) {
    int sock, own;
    if (!PyArg_ParseTuple(args, "ii", &sock, &own)) return NULL;
    struct child *children = NULL;
    struct exit_record *exited = NULL;
    pid_t *forgotten = NULL;
    struct pollfd *polled = NULL;
    size_t n_children = 0, n_exited = 0, n_forgotten = 0;
    size_t cap_children = 0, cap_exited = 0, cap_forgotten = 0, cap_polled = 0;
    pid_t waiting = 0;
    PyObject *result = NULL;
    unsigned char request[4096];
    for (;;) {
        if (grow((void **)&polled, &cap_polled, n_children + 1, sizeof *polled) < 0) goto done;
        polled[0].fd = sock;
        polled[0].events = POLLIN;
        for (size_t i = 0; i < n_children; i++) {
            polled[i + 1].fd = children[i].pidfd;
            polled[i + 1].events = POLLIN;
        }
        if (poll(polled, n_children + 1, -1) < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0) goto done;
                continue;
            }
            fail("poll");
            goto done;
        }
        /* exits first: reap now (no zombie is left), report if the worker waits for it */
        for (size_t i = n_children; i-- > 0;) {
            if (!polled[i + 1].revents) continue;
            struct exit_record record = {children[i].pid, 0, 0};
            struct rusage usage;
            pid_t got;
            do {
                got = wait4(record.pid, &record.status, 0, &usage);
            } while (got < 0 && errno == EINTR);
            if (got < 0) {
                fail("wait4");
                goto done;
            }
            record.cpu_us = (long long)usage.ru_utime.tv_sec * 1000000 + usage.ru_utime.tv_usec +
                            (long long)usage.ru_stime.tv_sec * 1000000 + usage.ru_stime.tv_usec;
            close(children[i].pidfd);
            children[i] = children[--n_children];
            size_t f = 0;
            while (f < n_forgotten && forgotten[f] != record.pid) f++;
            if (f < n_forgotten) {
                forgotten[f] = forgotten[--n_forgotten];
            } else if (record.pid == waiting) {
                waiting = 0;
                if (send_status(sock, &record) < 0) goto done;
            } else {
                if (grow((void **)&exited, &cap_exited, n_exited, sizeof *exited) < 0) goto done;
                exited[n_exited++] = record;
            }
        }
        if (!polled[0].revents) continue;
        ssize_t size = recv(sock, request, sizeof request, MSG_TRUNC);
        if (size < 0 && errno == EINTR) continue;
        if (size <= 0) {  /* the worker is gone */
            result = Py_NewRef(Py_None);
            goto done;
        }
        if (size > (ssize_t)sizeof request || size < 5 || (size - 5) % 4 || (request[0] != 'S' && request[0] != 'W')) {
            PyErr_SetString(PyExc_ValueError, "the worker sent the template a malformed request");
            goto done;
        }
        for (ssize_t at = 5; at < size; at += 4) {  /* forgotten jobs */
            pid_t pid = (pid_t)get_u32(request + at);
            size_t e = 0;
            while (e < n_exited && exited[e].pid != pid) e++;
            if (e < n_exited) {
                exited[e] = exited[--n_exited];
            } else {
                if (grow((void **)&forgotten, &cap_forgotten, n_forgotten, sizeof *forgotten) < 0) goto done;
                forgotten[n_forgotten++] = pid;
            }
        }
        unsigned long value = get_u32(request + 1);
        if (request[0] == 'W') {
            size_t e = 0;
            while (e < n_exited && exited[e].pid != (pid_t)value) e++;
            if (e < n_exited) {
                struct exit_record record = exited[e];
                exited[e] = exited[--n_exited];
                if (send_status(sock, &record) < 0) goto done;
            } else {
                waiting = (pid_t)value;
            }
            continue;
        }
        if (grow((void **)&children, &cap_children, n_children, sizeof *children) < 0) goto done;
        int pidfd = -1, ends[4];
        pid_t pid = make_spare(own, sock, value, &pidfd, ends);
        if (pid == 0)  /* the new job process: on to its setup, in Python (its copies of the tables are dropped) */
            return Py_BuildValue("(i(iiii)k)", 0, ends[0], ends[1], ends[2], ends[3], value);
        if (pid < 0) goto done;
        children[n_children].pidfd = pidfd;
        children[n_children++].pid = pid;
    }
done:
    for (size_t i = 0; i < n_children; i++) close(children[i].pidfd);
    free(children);
    free(exited);
    free(forgotten);
    free(polled);
    return result;
}

/* The job's own namespaces, scratch (/tmp, with `keep` bound back read-only), workdir and /proc: NULL, or
 * the step that failed (errno set). */
static const char *enter_namespaces(unsigned long namespaces, const char *options, const char *workdir,
                                    const char **keep_paths, Py_ssize_t n_keep) {
    int keep_fds[MAX_KEEP];
    if (unshare(namespaces) != 0) return "unshare";
    Py_ssize_t opened = 0;
    for (; opened < n_keep; opened++) {  /* opened in this namespace, before /tmp is covered */
        keep_fds[opened] = open(keep_paths[opened], O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (keep_fds[opened] < 0) break;
    }
    const char *step = opened < n_keep ? "open a kept directory" : NULL;
    if (step == NULL && mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, options) != 0) step = "mount /tmp";
    if (step == NULL && (mkdir("/tmp/.shm", 01777) != 0 || chmod("/tmp/.shm", 01777) != 0)) step = "/tmp/.shm";
    for (Py_ssize_t i = 0; step == NULL && i < n_keep; i++) {
        char source[64];
        snprintf(source, sizeof source, "/proc/self/fd/%d", keep_fds[i]);
        if (make_dirs(keep_paths[i]) != 0) step = "bind back: mkdir";
        else if (mount(source, keep_paths[i], NULL, MS_BIND | MS_REC, NULL) != 0) step = "bind back";
        else if (mount(NULL, keep_paths[i], NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, NULL) != 0)
            step = "bind back: read-only";
    }
    int saved = errno;
    for (Py_ssize_t i = 0; i < opened; i++) close(keep_fds[i]);
    errno = saved;
    if (step != NULL) return step;
    if (mkdir(workdir, 0700) != 0) return "mkdir workdir";
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "") != 0) return "mount /proc";
    return NULL;
}

PyDoc_STRVAR(enter_job_doc,
"enter_job(namespaces, tmpfs_options, workdir, keep, oom_first, bpf)\n\n"
"In a fresh job (PID 1 of its PID namespace where `namespaces` is not 0): die with the template\n"
"(PR_SET_PDEATHSIG), start a session of its own (setsid), unshare `namespaces` (0: none, and no mounts),\n"
"mount a tmpfs (`tmpfs_options`) on /tmp with /tmp/.shm (1777), bind each directory of\n"
"`keep` (bytes paths under /tmp) back read-only, create `workdir` (0700), mount a new /proc, set\n"
"oom_score_adj to 1000 if `oom_first`, and load the seccomp filter `bpf` (bytes, or None for none;\n"
"no_new_privs must already be set).");

static PyObject *enter_job(PyObject *self, PyObject *args) {
    unsigned long namespaces;
    const char *options, *workdir;
    PyObject *keep, *bpf;
    int oom_first;
    if (!PyArg_ParseTuple(args, "kyyO!pO", &namespaces, &options, &workdir, &PyTuple_Type, &keep, &oom_first, &bpf))
        return NULL;
    if (bpf != Py_None && (!PyBytes_Check(bpf) || PyBytes_GET_SIZE(bpf) == 0 || PyBytes_GET_SIZE(bpf) % 8 ||
                           PyBytes_GET_SIZE(bpf) / 8 > USHRT_MAX)) {
        PyErr_SetString(PyExc_ValueError, "bpf must be a BPF program (bytes, a multiple of 8) or None");
        return NULL;
    }
    Py_ssize_t n_keep = PyTuple_GET_SIZE(keep);
    if (n_keep > MAX_KEEP) {
        PyErr_SetString(PyExc_ValueError, "too many directories to keep");
        return NULL;
    }
    const char *keep_paths[MAX_KEEP];
    for (Py_ssize_t i = 0; i < n_keep; i++) {
        PyObject *item = PyTuple_GET_ITEM(keep, i);
        if (!PyBytes_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "keep must be a tuple of bytes paths");
            return NULL;
        }
        keep_paths[i] = PyBytes_AS_STRING(item);
    }
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return fail("prctl");
    if (setsid() < 0) return fail("setsid");  /* its own session and process group: kill(0) reaches only the job */
    if (namespaces != 0) {
        const char *step = enter_namespaces(namespaces, options, workdir, keep_paths, n_keep);
        if (step != NULL) return fail(step);
    }
    if (oom_first) {
        int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (fd < 0) return fail("oom_score_adj");
        ssize_t written = write(fd, "1000", 4);
        int saved = errno;
        close(fd);
        errno = saved;
        if (written != 4) return fail("oom_score_adj");
    }
    if (bpf != Py_None) {
        struct sock_fprog prog = {(unsigned short)(PyBytes_GET_SIZE(bpf) / 8),
                                  (struct sock_filter *)PyBytes_AS_STRING(bpf)};
        /* seccomp(2) with the flag that keeps the SSB mitigation off; prctl where the kernel lacks it */
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, &prog) != 0 &&
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
            return fail("seccomp");
    }
    Py_RETURN_NONE;
}

static int drop_capabilities(void) {
    for (int cap = 0; cap < 64; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return -1;
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    return (int)syscall(SYS_capset, &header, data);
}

PyDoc_STRVAR(wire_fds_doc,
"wire_fds(fds)\n\n"
"Put `fds` (stdin, stdout, stderr, requests, replies) on 0-4 and close every other descriptor.");

static PyObject *wire_fds(PyObject *self, PyObject *args) {
    int fds[5];
    if (!PyArg_ParseTuple(args, "(iiiii)", &fds[0], &fds[1], &fds[2], &fds[3], &fds[4])) return NULL;
    int high[5];  /* first above every target, so that no dup2 clobbers a source */
    for (int i = 0; i < 5; i++)
        if ((high[i] = fcntl(fds[i], F_DUPFD, 10)) < 0) return fail("dup");
    for (int i = 0; i < 5; i++)
        if (dup2(high[i], i) < 0) return fail("dup2");
    if (syscall(SYS_close_range, FIRST_FREE_FD, ~0U, 0) != 0) {  /* Linux < 5.9 */
        long max = sysconf(_SC_OPEN_MAX);
        for (long fd = FIRST_FREE_FD; fd < (max > 0 ? max : 65536); fd++) close((int)fd);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(limit_job_doc,
"limit_job(rlimits, uid, workdir, drop_capabilities)\n\n"
"Set each (resource, limit) of `rlimits` as soft and hard limit (never above a hard limit already set);\n"
"become `uid` (owner of `workdir`, no supplementary groups; -1: keep the uid) or, if `drop_capabilities`,\n"
"shed every capability; die with the template (PR_SET_PDEATHSIG, which the uid change clears); become\n"
"dumpable (so that /proc/self is readable); chdir to `workdir`.");

static PyObject *limit_job(PyObject *self, PyObject *args) {
    PyObject *rlimits;
    long long uid;
    const char *workdir;
    int drop_caps;
    if (!PyArg_ParseTuple(args, "O!Lyp", &PyTuple_Type, &rlimits, &uid, &workdir, &drop_caps)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(rlimits);
    int which[16];
    unsigned long long value[16];
    if (n > 16) {
        PyErr_SetString(PyExc_ValueError, "too many limits");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)  /* all parsed before the first change */
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(rlimits, i), "iK", &which[i], &value[i])) return NULL;
    if (uid < -1 || uid >= (long long)UINT_MAX) {
        PyErr_SetString(PyExc_ValueError, "uid out of range");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        struct rlimit old, limit = {value[i], value[i]};
        if (getrlimit(which[i], &old) != 0) return fail("getrlimit");
        if (old.rlim_max != RLIM_INFINITY) {  /* never try to raise a hard limit we do not own */
            if (limit.rlim_cur > old.rlim_max) limit.rlim_cur = old.rlim_max;
            if (limit.rlim_max > old.rlim_max) limit.rlim_max = old.rlim_max;
        }
        if (setrlimit(which[i], &limit) != 0) return fail("setrlimit");
    }
    if (uid >= 0) {
        if (chown(workdir, (uid_t)uid, (gid_t)uid) != 0) return fail("chown workdir");
        if (setgroups(0, NULL) != 0) return fail("setgroups");
        if (setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) != 0) return fail("setresgid");
        if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0) return fail("setresuid");
    } else if (drop_caps && drop_capabilities() != 0) {
        return fail("drop capabilities");
    }
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return fail("prctl");
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) return fail("prctl");
    if (chdir(workdir) != 0) return fail("chdir");
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fork_in_pid_namespace", fork_in_pid_namespace, METH_O, fork_in_pid_namespace_doc},
    {"serve_template", serve_template, METH_VARARGS, serve_template_doc},
    {"enter_job", enter_job, METH_VARARGS, enter_job_doc},
    {"wire_fds", wire_fds, METH_VARARGS, wire_fds_doc},
    {"limit_job", limit_job, METH_VARARGS, limit_job_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "agentgrpo.sandbox._native",
    .m_doc = "The job process's setup in C (see the comment at the top of _native.c).",
    .m_size = -1,
    .m_methods = methods,
};

#ifndef AGENTGRPO_SOURCE_SHA256
#define AGENTGRPO_SOURCE_SHA256 ""  /* built without setup.py: no check of its age */
#endif

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddStringConstant(m, "SOURCE_SHA256", AGENTGRPO_SOURCE_SHA256) != 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
