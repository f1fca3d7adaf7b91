/* Fixture for scripts/check-layers.sh --every-rule: a part of the conn that sees struct rudp_conn. */
#include "conn/conn_internal.h"
