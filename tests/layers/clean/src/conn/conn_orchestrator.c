/* Fixture for scripts/check-layers.sh: an orchestrator file of the conn may see struct rudp_conn. */
#include "conn/conn_internal.h"
