/* Fixture for scripts/check-layers.sh --every-rule: breaks the wire's rule. */
#include "conn/conn.h"
