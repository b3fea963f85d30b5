#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "err.h"

int de_errf(struct de_err *e, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}
