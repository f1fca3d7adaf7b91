/* Fixture for scripts/check-layers.sh: conn.c may see struct rudp_conn. */
#include "conn/conn_internal.h"
