/*
 * integration.static_link - the README's C example, compiled outside CMake against
 * build/lib/libairlock.a with exactly the flags the README gives, then run.
 */
#include <airlock.h>
#include <stdio.h>
#include <string.h>

static void list_orders(struct al_call *call, void *userdata)
{
    (void)userdata;
    static const char orders[] = "[{\"id\":1,\"amount\":12.5}]";
    al_call_return(call, orders, sizeof orders - 1);
}

int main(void)
{
    struct al_error err;
    struct al_config *cfg = al_config_new();
    struct al_runner *runner = NULL;
    if (!cfg || al_config_add_host(cfg, "store.listOrders", list_orders, NULL, 0) != AL_OK ||
        al_runner_new(cfg, &runner, &err) != AL_OK) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    static const char src[] = "const o = await store.listOrders(); return o[0].amount * 2;";
    struct al_run_opts *opts = al_run_opts_new();
    struct al_result *res = NULL;
    if (!opts || al_run_opts_set_source(opts, src, strlen(src), "run.js") != AL_OK ||
        al_run(runner, opts, &res, &err) != AL_OK) {
        fprintf(stderr, "run failed: %s\n", err.message);
        return 1;
    }
    int ok = al_result_status(res) == AL_STATUS_COMPLETED &&
             strcmp(al_result_value(res, NULL), "25") == 0;
    printf("%s\n", ok ? "25" : al_result_error_message(res));
    al_result_free(res);
    al_run_opts_free(opts);
    al_runner_free(runner);
    al_config_free(cfg);
    return ok ? 0 : 1;
}
