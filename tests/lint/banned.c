/* banned.c - calls scripts/checksrc.sh must refuse (CTest lint.checksrc_refuses). Never built. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int banned(char *out, const char *in);

int banned(char *out, const char *in)
{
    strcpy(out, in);
    return atoi(in) + system("true");
}
