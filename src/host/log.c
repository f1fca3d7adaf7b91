/* SPDX-License-Identifier: MIT */
/* host_log: the host's one way to the application's log callback. */
#include <stdarg.h>
#include <stdio.h>

#include "host_internal.h"

void host_log(struct rudp_host *h, int level, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	if (!h->cfg.log || level >= h->cfg.log_level_max)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	h->cfg.log(h->cfg.log_userdata, level, msg);
}
