/* Input of generate.sh: everything gputrace binds comes in through cupti.h
 * (activity, callback, result and version APIs, plus cuda.h for the driver
 * handle types); generate.sh's allowlists pick the items. */
#include <cupti.h>
