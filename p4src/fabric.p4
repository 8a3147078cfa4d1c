/*
 * fabric.p4: the program every switch of an aifabric fabric runs.
 *
 * One v1model program for leaves and spines: IPv4 routing with ECMP over
 * the 5-tuple, traffic classes to priorities, RED-like ECN marking from
 * queue depth, PFC pause frames generated from per-port buffer accounting,
 * and per port and priority counters. The PFC part runs only where the
 * controller fills pfc_ingress/pfc_egress: on BMv2, which has no buffer
 * model. The built-in target's buffer admits lossless frames itself and
 * generates PFC below P4 (emulator/targets/builtin/mmu.py), as a switch's
 * MMU does; a frame its traffic manager drops would never be released
 * from these registers. The controller (emulator/control)
 * fills every table; hosts have static neighbours, so ARP stops here.
 *
 * Valid for p4c (p4c-bm2-ss) and for the aifabric front end.
 */
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"

/* Shared by ingress (adds) and egress (releases): bytes each
 * (ingress port, priority) holds in the buffer, and when its last XOFF
 * went out (0: not paused). */
register<bit<32>>(PORT_PRIO_SLOTS) pfc_occupancy;
register<bit<48>>(PORT_PRIO_SLOTS) pfc_paused_at;

#include "include/parser.p4"
#include "include/ingress.p4"
#include "include/egress.p4"

V1Switch(FabricParser(), FabricVerifyChecksum(), FabricIngress(), FabricEgress(),
         FabricComputeChecksum(), FabricDeparser()) main;
