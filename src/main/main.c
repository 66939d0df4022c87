#include "core/err.h"
#include <stdio.h>
int main(void) { puts(fr_strerror(0)); return 0; }
