/* Fixture for scripts/check-layers.sh --every-rule: breaks the conn's rules. */
#include "policy/policy.h"
#include "host/host_internal.h"
#if RUDP_HAVE_SEND_POLICY
#endif
