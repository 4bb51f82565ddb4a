"""Writes the .proto files of Google's MCP gRPC transport from the
descriptors compiled into its PyPI wheel (`mcp-grpc-transport-proto`, which
ships the generated Python stubs but not the .proto text): how
crates/mcp-bridge-sdk/proto/ was made, and how to take a new version.

    pip install mcp-grpc-transport-proto==VERSION
    python scripts/grpc/proto_from_wheel.py crates/mcp-bridge-sdk/proto

Comments of the original do not survive compilation; the SDK's test
`grpc_proto_is_the_wheels` checks that the files compile to the wheel's
descriptors."""
import sys
from google.protobuf import descriptor_pb2 as d
import mcp_grpc_transport_proto.mcp_messages_pb2 as m, mcp_grpc_transport_proto.mcp_pb2 as s

T = d.FieldDescriptorProto
SCALAR = {T.TYPE_DOUBLE:"double",T.TYPE_FLOAT:"float",T.TYPE_INT64:"int64",T.TYPE_UINT64:"uint64",T.TYPE_INT32:"int32",
 T.TYPE_FIXED64:"fixed64",T.TYPE_FIXED32:"fixed32",T.TYPE_BOOL:"bool",T.TYPE_STRING:"string",T.TYPE_BYTES:"bytes",
 T.TYPE_UINT32:"uint32",T.TYPE_SFIXED32:"sfixed32",T.TYPE_SFIXED64:"sfixed64",T.TYPE_SINT32:"sint32",T.TYPE_SINT64:"sint64"}

def tname(f, pkg):
    if f.type in (T.TYPE_MESSAGE, T.TYPE_ENUM):
        n = f.type_name
        if n.startswith("." + pkg + "."):
            return n[len(pkg) + 2:]
        return n[1:]
    return SCALAR[f.type]

def opts(f):
    o = []
    if f.options.HasField("deprecated"): o.append(f"deprecated = {str(f.options.deprecated).lower()}")
    if f.options.HasField("packed"): o.append(f"packed = {str(f.options.packed).lower()}")
    return (" [" + ", ".join(o) + "]") if o else ""

def message(msg, pkg, ind, syntax, scope):
    out = [f"{ind}message {msg.name} {{"]
    maps = {n.name: n for n in msg.nested_type if n.options.map_entry}
    for r in msg.reserved_range:
        out.append(f"{ind}  reserved {r.start}" + (f" to {r.end-1}" if r.end - 1 != r.start else "") + ";")
    for rn in msg.reserved_name:
        out.append(f'{ind}  reserved "{rn}";')
    for e in msg.enum_type:
        out += enum(e, ind + "  ")
    # A map field makes its entry type where it is declared: nested
    # messages declared before it are written before it, so the nested
    # types keep the original's order.
    nested = list(msg.nested_type)
    written = set()

    def nested_before(entry_name):
        for n in nested:
            if n.name == entry_name:
                written.add(n.name)
                return
            if n.name not in written and not n.options.map_entry:
                out.extend(message(n, pkg, ind + "  ", syntax, scope + [msg.name]))
                written.add(n.name)

    real_oneofs = {}
    for f in msg.field:
        if f.HasField("oneof_index") and not f.proto3_optional:
            real_oneofs.setdefault(f.oneof_index, []).append(f)
    done = set()
    for f in msg.field:
        if f.HasField("oneof_index") and not f.proto3_optional:
            i = f.oneof_index
            if i in done: continue
            done.add(i)
            out.append(f"{ind}  oneof {msg.oneof_decl[i].name} {{")
            for g in real_oneofs[i]:
                out.append(f"{ind}    {rel(tname(g, pkg), scope + [msg.name])} {g.name} = {g.number}{opts(g)};")
            out.append(f"{ind}  }}")
            continue
        t = tname(f, pkg)
        short = t.split(".")[-1]
        if f.label == T.LABEL_REPEATED and f.type == T.TYPE_MESSAGE and short in maps and t.startswith(".".join(scope + [msg.name])):
            nested_before(short)
            e = maps[short]
            k, v = e.field[0], e.field[1]
            out.append(f"{ind}  map<{tname(k, pkg)}, {rel(tname(v, pkg), scope + [msg.name])}> {f.name} = {f.number}{opts(f)};")
            continue
        label = "repeated " if f.label == T.LABEL_REPEATED else ("optional " if f.proto3_optional else "")
        out.append(f"{ind}  {label}{rel(t, scope + [msg.name])} {f.name} = {f.number}{opts(f)};")
    nested_before(None)
    out.append(f"{ind}}}")
    return out

def rel(t, scope):
    # Names are printed from the package down, nested ones included.
    return t

def enum(e, ind):
    out = [f"{ind}enum {e.name} {{"]
    for v in e.value:
        out.append(f"{ind}  {v.name} = {v.number};")
    out.append(f"{ind}}}")
    return out

HEADER = """// Google's MCP gRPC transport, {name} of mcp-grpc-transport-proto 0.2.0
// (https://github.com/GoogleCloudPlatform/mcp-grpc-transport-proto, MIT
// license: LICENSE here). Written by scripts/grpc/proto_from_wheel.py from
// the descriptors in the PyPI wheel mcp_grpc_transport_proto-0.2.0 (sha256
// 2cfe01a9b7f0c16c2fdb10195672818ff1636e7bcea7b3afe179558011e207dd); the
// original's comments are not in the wheel.
"""


def write(fd):
    out = [HEADER.format(name=fd.name) + f'syntax = "{fd.syntax or "proto2"}";', "", f"package {fd.package};", ""]
    for dep in fd.dependency:
        out.append(f'import "{dep}";')
    if fd.dependency: out.append("")
    o = fd.options
    for field, value in o.ListFields():
        v = f'"{value}"' if isinstance(value, str) else str(value).lower()
        out.append(f"option {field.name} = {v};")
    if o.ListFields(): out.append("")
    for e in fd.enum_type:
        out += enum(e, ""); out.append("")
    for msg in fd.message_type:
        out += message(msg, fd.package, "", fd.syntax, []); out.append("")
    for svc in fd.service:
        out.append(f"service {svc.name} {{")
        for meth in svc.method:
            cs = "stream " if meth.client_streaming else ""
            ss = "stream " if meth.server_streaming else ""
            it = meth.input_type[len(fd.package) + 2:] if meth.input_type.startswith("." + fd.package) else meth.input_type[1:]
            ot = meth.output_type[len(fd.package) + 2:] if meth.output_type.startswith("." + fd.package) else meth.output_type[1:]
            mo = meth.options.ListFields()
            out.append(f"  rpc {meth.name}({cs}{it}) returns ({ss}{ot});" if not mo else f"  rpc {meth.name}({cs}{it}) returns ({ss}{ot}) {{ /* options: {mo} */ }}")
        out.append("}")
    return "\n".join(out) + "\n"

for mod in (m, s):
    fd = d.FileDescriptorProto(); mod.DESCRIPTOR.CopyToProto(fd)
    with open(sys.argv[1] + "/" + fd.name, "w") as out:
        out.write(write(fd))
