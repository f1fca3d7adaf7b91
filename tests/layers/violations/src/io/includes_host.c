/* Fixture for scripts/check-layers.sh --every-rule: breaks the io's rule. */
#include "host/host_internal.h"
