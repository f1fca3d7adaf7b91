/* SPDX-License-Identifier: MIT */
/* Text for the RUDP_WIRE_* statuses: what a decoder refused, for logs and tests. */
#include "wire.h"

const char *rudp_wire_strstatus(int status)
{
	if (status >= 0)
		return "ok";
	switch (status) {
	case RUDP_WIRE_TRUNCATED: return "truncated packet";
	case RUDP_WIRE_BAD_ID: return "unexpected packet id";
	case RUDP_WIRE_BAD_MAGIC: return "bad offline magic";
	case RUDP_WIRE_BAD_VALUE: return "forbidden field value";
	case RUDP_WIRE_NO_SPACE: return "output buffer too small";
	case RUDP_WIRE_TRAILING: return "trailing bytes";
	default: return "unknown wire status";
	}
}
