/* tools/sg_baseline.c -- SimGrid's own cost of the activities of one grid
 * step of tpusim's exact fidelity, for `make bench`: one actor on chip0 of a
 * platform file runs N steps of a Pallas pipeline's steady state with plain
 * SimGrid calls and nothing else -- the step overhead (a sleep), two input
 * DMAs (a transfer each over the chip's HBM route, issued together and
 * waited), the body (an execution). tools/bench.sh runs it under callgrind
 * beside `tpusim run --fidelity exact` and prints instructions per step of
 * both.  usage: sg_baseline PLATFORM.xml STEPS */
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <stdio.h>
#include <stdlib.h>

static void worker(int argc, char **argv)
{
    (void)argc, (void)argv;
    long steps = *(const long *)sg_actor_self_get_data();
    sg_mailbox_t mb = sg_mailbox_by_name("dma");
    int token = 0;
    for (long s = 0; s < steps; s++) {
        sg_actor_sleep_for(3.5e-7);
        void *got[2];
        sg_comm_t c[4];
        c[0] = sg_mailbox_put_async(mb, &token, 32768);
        c[1] = sg_mailbox_get_async(mb, &got[0]);
        c[2] = sg_mailbox_put_async(mb, &token, 32768);
        c[3] = sg_mailbox_get_async(mb, &got[1]);
        sg_comm_wait_all(c, 4);
        sg_actor_execute(4.2e6);
    }
}

int main(int argc, char **argv)
{
    simgrid_init(&argc, argv);
    if (argc != 3) {
        fprintf(stderr, "usage: sg_baseline PLATFORM.xml STEPS\n");
        return 2;
    }
    long steps = atol(argv[2]);
    simgrid_load_platform(argv[1]);
    sg_actor_t a = sg_actor_init("worker", sg_host_by_name("chip0"));
    sg_actor_set_data(a, &steps);
    sg_actor_start(a, worker, 0, NULL);
    simgrid_run();
    printf("%ld steps in %.9g s\n", steps, simgrid_get_clock());
    return 0;
}
