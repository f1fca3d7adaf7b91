/* SPDX-License-Identifier: MIT */
/*
 * Backend choice, made once per host. The environment (RUDP_IO) beats the
 * config field because it is the operator's switch: a deployment can force
 * the fallback in a sandbox that forbids io_uring without a rebuild. "auto"
 * prefers io_uring and falls back to recvmmsg/sendmmsg when io_uring is not
 * built in or the kernel refuses it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "io.h"
#include "rudp.h"

#if !RUDP_HAVE_IO_URING
/* Built without liburing: io.h promises ENOSYS, so callers (the tests) need
 * no build switch of their own. */
struct rudp_io *rudp_io_uring_create(int fd, uint32_t batch, uint32_t rx_buffers, bool gro,
				     uint32_t more_sockets, int *err)
{
	(void)fd;
	(void)batch;
	(void)rx_buffers;
	(void)gro;
	(void)more_sockets;
	*err = ENOSYS;
	return NULL;
}
#else
static const char *why_uring_failed(int err)
{
	switch (err) {
	case ENOSYS: return "the kernel has no io_uring";
	case EPERM:
		return "io_uring is forbidden here (kernel.io_uring_disabled, or a seccomp filter as in many "
		       "containers)";
	case EINVAL: return "the kernel lacks provided-buffer rings or multishot recvmsg (needs 6.0)";
	case ENOMEM: return "not enough memory for the ring (memlock limit?)";
	default: return strerror(err);
	}
}
#endif

struct rudp_io *rudp_io_open(int fd, uint32_t batch, uint32_t rx_buffers, bool gro, uint32_t more_sockets,
			     int choice, const char *env, char *note, size_t note_len, int *note_level,
			     int *err)
{
	const char *by = "config io.backend";
	*err = 0;
	*note_level = 2;
	if (env && *env) {
		if (!strcmp(env, "uring")) {
			choice = RUDP_IO_CHOICE_URING;
			by = "RUDP_IO";
		} else if (!strcmp(env, "mmsg")) {
			choice = RUDP_IO_CHOICE_MMSG;
			by = "RUDP_IO";
		} else if (strcmp(env, "auto") != 0) {
			snprintf(note, note_len, "RUDP_IO=%.32s is not one of uring, mmsg, auto", env);
			*err = RUDP_E_INVALID;
			*note_level = 0;
			return NULL;
		}
	}
	if (choice != RUDP_IO_CHOICE_MMSG) {
		int uerr = 0;
		struct rudp_io *io = rudp_io_uring_create(fd, batch, rx_buffers, gro, more_sockets, &uerr);
		if (io) {
			snprintf(note, note_len, "io backend uring (%s)",
				 choice == RUDP_IO_CHOICE_URING ? by : "auto");
			return io;
		}
#if !RUDP_HAVE_IO_URING
		const char *why = "this librudp was built without liburing";
#else
		const char *why = why_uring_failed(uerr);
#endif
		if (choice == RUDP_IO_CHOICE_URING) {
			snprintf(note, note_len, "io_uring requested by %s but unavailable: %s", by, why);
			*err = RUDP_E_UNSUPPORTED;
			*note_level = 0;
			errno = uerr;
			return NULL;
		}
		struct rudp_io *m = rudp_io_mmsg_create(fd, batch);
		if (!m) {
			*err = RUDP_E_NOMEM;
			return NULL;
		}
		snprintf(note, note_len, "io_uring unavailable (%s); using io backend mmsg", why);
		/* Worth a warning only when io_uring was built in and refused. */
		*note_level = RUDP_HAVE_IO_URING ? 1 : 2;
		return m;
	}
	struct rudp_io *m = rudp_io_mmsg_create(fd, batch);
	if (!m) {
		*err = RUDP_E_NOMEM;
		return NULL;
	}
	snprintf(note, note_len, "io backend mmsg (%s)", by);
	return m;
}
