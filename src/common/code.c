/*
 * code.c - names and default messages of enum al_code, generated from the one X-macro list in
 * airlock.h so a new code cannot be added without its name.
 */
#include <string.h>

#include "airlock.h"

const char *al_code_name(enum al_code code)
{
    switch (code) {
#define AL_CODE_NAME_(name, num, msg) \
    case AL_##name:                   \
        return #name;
        AL_CODE_LIST(AL_CODE_NAME_)
#undef AL_CODE_NAME_
    }
    return "UNKNOWN";
}

const char *al_code_message(enum al_code code)
{
    switch (code) {
#define AL_CODE_MSG_(name, num, msg) \
    case AL_##name:                  \
        return msg;
        AL_CODE_LIST(AL_CODE_MSG_)
#undef AL_CODE_MSG_
    }
    return "unknown error";
}

int al_code_from_name(const char *name)
{
#define AL_CODE_FROM_(cname, num, msg) \
    if (strcmp(name, #cname) == 0) {   \
        return num;                    \
    }
    AL_CODE_LIST(AL_CODE_FROM_)
#undef AL_CODE_FROM_
    return -1;
}

const char *al_version(void)
{
    return AIRLOCK_VERSION; /* the project() VERSION of CMakeLists.txt, the one place it is set */
}
