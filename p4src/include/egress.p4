/*
 * fabric.p4 egress: the pause frames PFC generates, the egress side of PFC
 * accounting (XON when a port's bytes drain below XON, XOFF refresh before
 * the pause runs out), RED-like ECN marking of ECN-capable packets from the
 * queue depth, and per port and priority counters.
 */
#ifndef FABRIC_EGRESS_P4
#define FABRIC_EGRESS_P4

control FabricEgress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    counter(PORT_PRIO_SLOTS, CounterType.packets_and_bytes) tx_counter;
    counter(PORT_PRIO_SLOTS, CounterType.packets) ecn_counter;
    counter(PORT_PRIO_SLOTS, CounterType.packets) pfc_tx_counter;

    bit<32> xon_bytes = 0;
    bit<48> refresh_us = 0;
    bit<32> kmin = 0;
    bit<32> kmax = 0;
    bit<32> slope = 0;
    bit<1> ecn_enabled = 0;

    action set_port_mac(bit<48> mac) {
        hdr.ethernet.src_addr = mac;
    }

    /* Source MAC of frames the switch itself sends out of a port. */
    table port_mac {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_port_mac; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action set_resume(bit<32> xon, bit<48> refresh) {
        xon_bytes = xon;
        refresh_us = refresh;
    }

    /* XON threshold and XOFF refresh period per lossless (port, priority). */
    table pfc_egress {
        key = {
            standard_metadata.ingress_port: exact;
            meta.pfc_priority: exact;
        }
        actions = { set_resume; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    /* Marking probability: 0 below kmin, (depth - kmin) * slope / 65536
     * between (the controller sets slope = pmax * 65536 / (kmax - kmin)),
     * 1 from kmax; depths in packets of the packet's own queue. */
    action set_ecn(bit<32> min_pkts, bit<32> max_pkts, bit<32> slope_q16) {
        ecn_enabled = 1;
        kmin = min_pkts;
        kmax = max_pkts;
        slope = slope_q16;
    }

    table ecn_config {
        key = {
            standard_metadata.egress_port: exact;
            standard_metadata.priority: exact;
        }
        actions = { set_ecn; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    action send_pause(bit<16> quanta) {
        meta.pfc_frame = 1;
        meta.pfc_quanta = quanta;
        clone_preserving_field_list(CloneType.E2E,
            PFC_SESSION_BASE + (bit<32>)standard_metadata.ingress_port, 1);
    }

    apply {
        bit<32> out_slot = ((bit<32>)standard_metadata.egress_port << 3);
        if (meta.pfc_frame == 1 && standard_metadata.instance_type != INSTANCE_TYPE_NORMAL) {
            /* A clone made to carry a pause frame: rebuild it as one. (The
             * original keeps the field list's values too, as clones copy
             * them when the pipeline ends; its instance type tells it apart.) */
            hdr.packet_in.setInvalid();
            hdr.packet_out.setInvalid();
            hdr.vlan.setInvalid();
            hdr.arp.setInvalid();
            hdr.ipv4.setInvalid();
            hdr.udp.setInvalid();
            hdr.bth.setInvalid();
            hdr.ethernet.setValid();
            hdr.ethernet.dst_addr = PFC_DST_MAC;
            hdr.ethernet.src_addr = 0;
            hdr.ethernet.ether_type = ETHERTYPE_MAC_CONTROL;
            port_mac.apply();
            hdr.pfc.setValid();
            hdr.pfc = { MAC_CONTROL_PFC, 0, 8w1 << meta.pfc_priority, 0, 0, 0, 0, 0, 0, 0, 0 };
            if (meta.pfc_priority == 0) { hdr.pfc.time0 = meta.pfc_quanta; }
            else if (meta.pfc_priority == 1) { hdr.pfc.time1 = meta.pfc_quanta; }
            else if (meta.pfc_priority == 2) { hdr.pfc.time2 = meta.pfc_quanta; }
            else if (meta.pfc_priority == 3) { hdr.pfc.time3 = meta.pfc_quanta; }
            else if (meta.pfc_priority == 4) { hdr.pfc.time4 = meta.pfc_quanta; }
            else if (meta.pfc_priority == 5) { hdr.pfc.time5 = meta.pfc_quanta; }
            else if (meta.pfc_priority == 6) { hdr.pfc.time6 = meta.pfc_quanta; }
            else { hdr.pfc.time7 = meta.pfc_quanta; }
            hdr.pfc_pad.setValid();
            hdr.pfc_pad.zeros = 0;
            truncate(60);
            pfc_tx_counter.count(out_slot | (bit<32>)meta.pfc_priority);
            return;
        }
        out_slot = out_slot | (bit<32>)standard_metadata.priority;
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        }
        if (meta.lossless == 1) {
            /* The packet leaves the buffer: release its bytes. */
            bit<32> held;
            pfc_occupancy.read(held, meta.port_prio);
            held = held |-| standard_metadata.packet_length;
            pfc_occupancy.write(meta.port_prio, held);
            bit<48> paused_at;
            pfc_paused_at.read(paused_at, meta.port_prio);
            meta.pfc_priority = (bit<3>)meta.port_prio;
            if (paused_at != 0) {
                if (pfc_egress.apply().hit) {
                    if (held <= xon_bytes) {
                        pfc_paused_at.write(meta.port_prio, 0);
                        send_pause(0);
                    } else if (standard_metadata.egress_global_timestamp + 1 - paused_at >= refresh_us) {
                        pfc_paused_at.write(meta.port_prio, standard_metadata.egress_global_timestamp + 1);
                        send_pause(meta.pfc_quanta);
                    }
                }
            }
        }
        if (hdr.ipv4.isValid() && hdr.ipv4.ecn != ECN_NOT_ECT) {
            ecn_config.apply();
            if (ecn_enabled == 1) {
                bit<32> depth = (bit<32>)standard_metadata.enq_qdepth;
                bit<1> mark = 0;
                if (depth >= kmax) {
                    mark = 1;
                } else if (depth > kmin) {
                    bit<32> chance;
                    random(chance, 0, 65535);
                    if (chance < (depth - kmin) * slope) {
                        mark = 1;
                    }
                }
                if (mark == 1) {
                    hdr.ipv4.ecn = ECN_CE;
                    ecn_counter.count(out_slot);
                }
            }
        }
        tx_counter.count(out_slot);
    }
}

#endif
