/* SPDX-License-Identifier: MIT */
/*
 * A librudp server in a forked child, for host tests whose client blocks
 * in one call (rudp_ping) while the server must be serviced. The child
 * makes the host itself (a host, like an io_uring ring, belongs to the
 * process that made it), reports its address through a pipe, services it
 * for serve_ms and exits 0; 1 when it could not start. Include after
 * cmocka.h and rudp.h.
 */
#ifndef RUDP_TEST_COMMON_FORK_SERVER_H
#define RUDP_TEST_COMMON_FORK_SERVER_H

#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "test_clock.h"

struct fork_server {
	pid_t pid;
	char addr[64]; /* the server's address, for the client */
};

/* Starts the child: a host made from sc (bind it to port 0), then
 * setup(server) when given (non-zero: the child fails). Returns once the
 * server's address is in s->addr. */
static inline void fork_server_start(struct fork_server *s, const rudp_config *sc,
				     int (*setup)(rudp_host *server), uint32_t serve_ms)
{
	int fds[2];

	/* The whole buffer goes through the pipe: no uninitialised bytes
	 * (valgrind fails the child on them). */
	memset(s->addr, 0, sizeof(s->addr));
	assert_int_equal(pipe(fds), 0);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0) {
		rudp_host *server = NULL;
		rudp_event ev[8];

		close(fds[0]);
		if (rudp_host_create(sc, &server) != 0 || (setup && setup(server) != 0) ||
		    rudp_host_local_address(server, s->addr, sizeof(s->addr)) != 0)
			_exit(1);
		if (write(fds[1], s->addr, sizeof(s->addr)) != (ssize_t)sizeof(s->addr))
			_exit(1);
		close(fds[1]);
		for (uint64_t until = now_ms() + serve_ms; now_ms() < until;)
			rudp_service(server, ev, 8, 10);
		rudp_host_destroy(server);
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], s->addr, sizeof(s->addr)), (ssize_t)sizeof(s->addr));
	close(fds[0]);
}

/* Waits for a forked child, which must exit 0. */
static inline void fork_child_wait(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Waits for the child: it must have served and exited 0. */
static inline void fork_server_wait(struct fork_server *s)
{
	fork_child_wait(s->pid);
}

#endif
