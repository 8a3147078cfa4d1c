/*
 * v1model.p4 for the aifabric P4 toolchain.
 *
 * The v1model architecture of BMv2's simple_switch, as p4c declares it in
 * p4include/v1model.p4: the same types, externs, signatures and package, so
 * a program written for p4c + BMv2 means the same here. The text is our own.
 *
 * Like p4c, the declarations depend on V1MODEL_VERSION. p4c does not define
 * it, so a program gets 20180101 unless it defines the macro before the
 * #include: that version has the non-generic counter, meter and
 * register<T>. With 20200408 (or later) counter, meter and register take
 * the index type as a type parameter (counter<I>, meter<I>,
 * register<T, I>) and ports have the type PortId_t.
 */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

/* Match kinds v1model adds to exact, ternary and lpm. */
match_kind {
    range,      /* lo <= key <= hi */
    optional,   /* exact match, or wildcard */
    selector    /* input of an action selector's hash */
}

/* The architecture version the program was compiled against. */
const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9> PortId_t;
#endif

/*
 * Intrinsic metadata of simple_switch. Widths are BMv2's: ports 9 bits,
 * queue depths 19 bits (in packets), enq_timestamp and deq_timedelta 32
 * bits (microseconds), global timestamps 48 bits (microseconds).
 */
@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t ingress_port;
    PortId_t egress_spec;            /* set in ingress: the output port */
    PortId_t egress_port;            /* in egress: the port the packet leaves by */
#else
    bit<9>   ingress_port;
    bit<9>   egress_spec;
    bit<9>   egress_port;
#endif
    bit<32>  instance_type;          /* normal, clone, resubmit, recirculate, replica */
    bit<32>  packet_length;          /* bytes */

    @alias("queueing_metadata.enq_timestamp")
    bit<32>  enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")
    bit<19>  enq_qdepth;
    @alias("queueing_metadata.deq_timedelta")
    bit<32>  deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")
    bit<19>  deq_qdepth;

    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48>  ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48>  egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp")
    bit<16>  mcast_grp;              /* multicast group, 0 for unicast */
    @alias("intrinsic_metadata.egress_rid")
    bit<16>  egress_rid;             /* replication id of a multicast copy */

    bit<1>   checksum_error;         /* set by verify_checksum() on a mismatch */
    error    parser_error;           /* the parser's error, NoError if it accepted */

    @alias("intrinsic_metadata.priority")
    bit<3>   priority;               /* egress queue (with --priority-queues) */
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* An array of counters, updated with count(index). */
extern counter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    counter(bit<32> size, CounterType type);
#if V1MODEL_VERSION >= 20200408
    void count(in I index);
#else
    void count(in bit<32> index);
#endif
}

/* One counter per entry of the table that names it in 'counters = ...'. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* Colours written by meters. */
#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

/* An array of two-rate three-colour meters (RFC 2698). */
extern meter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    meter(bit<32> size, MeterType type);
#if V1MODEL_VERSION >= 20200408
    void execute_meter<T>(in I index, out T result);
#else
    void execute_meter<T>(in bit<32> index, out T result);
#endif
}

/* One meter per entry of the table that names it in 'meters = ...'. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* An array of state cells the data plane reads and writes. */
#if V1MODEL_VERSION >= 20200408
extern register<T, I>
#else
extern register<T>
#endif
{
    register(bit<32> size);
    @noSideEffects
#if V1MODEL_VERSION >= 20200408
    void read(out T result, in I index);
#else
    void read(out T result, in bit<32> index);
#endif
#if V1MODEL_VERSION >= 20200408
    void write(in I index, in T value);
#else
    void write(in bit<32> index, in T value);
#endif
}

/* Table implementation: actions and their data kept apart from the entries. */
extern action_profile {
    action_profile(bit<32> size);
}

/* result = a random value in [lo, hi]. */
extern void random<T>(out T result, in T lo, in T hi);

/* Send data to the control plane (receiver is ignored by simple_switch). */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

/* Old form, kept for old programs: use mark_to_drop(standard_metadata). */
@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

/* Drop the packet at the end of this pipeline: egress_spec = drop port, mcast_grp = 0. */
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (hash(data) % max), or base when max is 0. */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* Table implementation choosing one member of a group by a hash of the 'selector' keys. */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,    /* copy of the packet as it entered ingress, sent to egress */
    E2E     /* copy of the packet as it leaves egress, sent to egress again */
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/* In VerifyChecksum: when condition holds and checksum does not match data, set checksum_error. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* In ComputeChecksum: when condition holds, checksum = algo(data). */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* As above, with the unparsed payload appended to data. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Send a copy of the packet to the clone session's port. */
extern void clone(in CloneType type, in bit<32> session);

/* Old forms that took the preserved fields as data; use the _preserving_field_list forms. */
@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);
@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);
@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);

/*
 * Resubmit (back to ingress), recirculate (after the deparser, back to the
 * parser) or clone, keeping the user metadata fields annotated with
 * @field_list(index).
 */
extern void resubmit_preserving_field_list(bit<8> index);
extern void recirculate_preserving_field_list(bit<8> index);
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Keep only the first length bytes of the packet when it is sent. */
extern void truncate(in bit<32> length);

/* Debugging aids of simple_switch. */
extern void assert(in bool check);
extern void assume(in bool check);
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The six programmable blocks of the v1model pipeline, in packet order. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif  /* _V1_MODEL_P4_ */
