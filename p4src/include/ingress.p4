/*
 * fabric.p4 ingress: packet-out from the controller, classification of
 * traffic classes into priorities, IPv4 routing with ECMP over an action
 * selector, and the ingress side of PFC: per (ingress port, priority)
 * buffer accounting that sends a pause frame upstream when the bytes a
 * port holds in the buffer pass XOFF (as a switch with ingress-accounted
 * lossless buffers does), and again, once a refresh period has passed, for
 * every packet that still arrives above XOFF: the upstream's pause ran out
 * while the bytes could not leave (their own queue paused, as in a PFC
 * storm), so egress had nothing to refresh it with.
 */
#ifndef FABRIC_INGRESS_P4
#define FABRIC_INGRESS_P4

control FabricIngress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    counter(PORT_PRIO_SLOTS, CounterType.packets_and_bytes) rx_counter;
    counter(PORT_PRIO_SLOTS, CounterType.packets_and_bytes) drop_counter;
    counter(PORT_PRIO_SLOTS, CounterType.packets) pfc_rx_counter;

    bit<32> xoff_bytes = 0;
    bit<48> refresh_us = 0;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_priority(bit<3> priority) {
        standard_metadata.priority = priority;
    }

    /* DSCP (and PCP when tagged, BTH opcode for CNPs) to priority. */
    table classify {
        key = {
            hdr.ipv4.dscp: ternary;
            hdr.vlan.isValid(): ternary;
            hdr.vlan.pcp: ternary;
            hdr.bth.isValid(): ternary;
            hdr.bth.opcode: ternary;
        }
        actions = { set_priority; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    action set_nexthop(bit<9> port, bit<48> smac, bit<48> dmac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.src_addr = smac;
        hdr.ethernet.dst_addr = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    /* ECMP: one member per next hop. Every switch hashes the 5-tuple
     * (the RoCE UDP source port included, so queue pairs spread over
     * spines) with CRC-32 and selects on the 16 bits that start at its own
     * hash offset. Switches of successive tiers are given different offsets
     * (as SAI's ECMP hash offset is set per tier): with one hash everywhere,
     * the flows a leaf sent to one spine would all share the same hash bits
     * there too and the next tier could use only one of its uplinks (hash
     * polarization). */
    action set_hash_offset(bit<8> offset) {
        meta.hash_offset = offset;
    }

    table ecmp_hash {
        key = { }
        actions = { set_hash_offset; }
        default_action = set_hash_offset(0);
        size = 1;
    }

    action_selector(HashAlgorithm.crc16, 32w4096, 32w16) ecmp_selector;

    table routes {
        key = {
            hdr.ipv4.dst_addr: lpm;
            meta.ecmp_key: selector;
        }
        actions = { set_nexthop; NoAction; }
        implementation = ecmp_selector;
        size = 4096;
    }

    action set_lossless(bit<32> xoff, bit<16> quanta, bit<48> refresh) {
        meta.lossless = 1;
        xoff_bytes = xoff;
        meta.pfc_quanta = quanta;
        refresh_us = refresh;
    }

    /* Lossless (port, priority) pairs, their XOFF threshold in bytes and
     * XOFF refresh period (as FabricEgress.pfc_egress has it). */
    table pfc_ingress {
        key = {
            standard_metadata.ingress_port: exact;
            standard_metadata.priority: exact;
        }
        actions = { set_lossless; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }
        meta.port_prio = ((bit<32>)standard_metadata.ingress_port << 3);
        if (hdr.pfc.isValid()) {
            /* Only targets without PFC in the MAC hand these to P4; the
             * controller honours them as best it can (BMv2: queue rates). */
            pfc_rx_counter.count(meta.port_prio);
            digest<pfc_pause_t>(1, { standard_metadata.ingress_port, hdr.pfc.class_enable,
                hdr.pfc.time0, hdr.pfc.time1, hdr.pfc.time2, hdr.pfc.time3,
                hdr.pfc.time4, hdr.pfc.time5, hdr.pfc.time6, hdr.pfc.time7 });
            drop();
            exit;
        }
        if (!hdr.ipv4.isValid()) {
            /* Hosts have static neighbours: ARP and other L2 traffic end here. */
            drop_counter.count(meta.port_prio);
            drop();
            exit;
        }
        classify.apply();
        meta.port_prio = meta.port_prio | (bit<32>)standard_metadata.priority;
        rx_counter.count(meta.port_prio);
        if (hdr.ipv4.ttl <= 1) {
            drop_counter.count(meta.port_prio);
            drop();
            exit;
        }
        ecmp_hash.apply();
        hash(meta.flow_hash, HashAlgorithm.crc32, 32w0, { hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
            hdr.ipv4.protocol, meta.l4_src_port, meta.l4_dst_port }, 64w0x100000000);
        meta.ecmp_key = (bit<16>)(meta.flow_hash >> meta.hash_offset);
        if (!routes.apply().hit) {
            drop_counter.count(meta.port_prio);
            drop();
            exit;
        }
        pfc_ingress.apply();
        if (meta.lossless == 1) {
            bit<32> held;
            pfc_occupancy.read(held, meta.port_prio);
            held = held + standard_metadata.packet_length;
            pfc_occupancy.write(meta.port_prio, held);
            if (held >= xoff_bytes) {
                bit<48> paused_at;
                pfc_paused_at.read(paused_at, meta.port_prio);
                bit<48> now = standard_metadata.ingress_global_timestamp + 1;
                if (paused_at == 0 || now - paused_at >= refresh_us) {
                    /* XOFF once per transition; egress refreshes it while
                     * the bytes leave, this while they only arrive. */
                    pfc_paused_at.write(meta.port_prio, now);
                    meta.pfc_frame = 1;
                    meta.pfc_priority = standard_metadata.priority;
                    clone_preserving_field_list(CloneType.I2E,
                        PFC_SESSION_BASE + (bit<32>)standard_metadata.ingress_port, 1);
                }
            }
        }
    }
}

#endif
