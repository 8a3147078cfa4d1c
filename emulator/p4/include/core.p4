/*
 * core.p4 for the aifabric P4 toolchain.
 *
 * The P4-16 core library: the declarations every P4-16 program sees
 * (P4-16 specification, appendix "core.p4"). The names, types and
 * signatures match p4c's p4include/core.p4, because programs written for
 * p4c rely on them; the text is our own.
 */

#ifndef _CORE_P4_
#define _CORE_P4_

/* Errors a parser can signal; more can be added with further error {} blocks. */
error {
    NoError,                /* nothing went wrong */
    PacketTooShort,         /* extract or lookahead past the end of the packet */
    NoMatch,                /* no case of a select expression matched */
    StackOutOfBounds,       /* header stack index out of range, or .next on a full stack */
    HeaderTooShort,         /* a varbit field longer than its declared maximum */
    ParserTimeout,          /* the parser ran out of time */
    ParserInvalidArgument   /* a parser operation got a value the target does not support */
}

/* The packet as the parser sees it, with a cursor that extract() advances. */
extern packet_in {
    /* Copy the next sizeof(T) bits into hdr and make it valid. */
    void extract<T>(out T hdr);
    /* Same, for a header whose single varbit field holds the given number of bits. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* The next sizeof(T) bits, leaving the cursor where it is. */
    T lookahead<T>();
    /* Skip bits. */
    void advance(in bit<32> sizeInBits);
    /* Length of the whole packet in bytes (not every target offers it). */
    bit<32> length();
}

/* The packet being built by the deparser. */
extern packet_out {
    /* Append hdr if it is valid; structs, stacks and unions emit their members in order. */
    void emit<T>(in T hdr);
}

/* In a parser: when check is false, stop with error toSignal (go to reject). */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing. */
@noWarn("unused")
action NoAction() {}

/* Match kinds every architecture knows; architectures may add more. */
match_kind {
    exact,      /* equal to the key */
    ternary,    /* equal under a mask */
    lpm         /* longest matching prefix */
}

/* Compile-time checks: stop compilation with message when check is false. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
