/* option_error: how the option parsers (options.c, class_filter.c) write
 * their messages: set_err, shared with the other pure parsers. */
#ifndef HPROF_OPTION_ERROR_H
#define HPROF_OPTION_ERROR_H

#include "../core/error_message.h"

#endif
