/* Fixture for scripts/check-layers.sh --every-rule: breaks the policy's rules. */
#include "conn/conn_internal.h"
#include "io/io.h"
