//! The recursive-descent parser.
//!
//! One pass over the text builds the module; references to functions and
//! constants (`call @f`, `addr @c`) are recorded by name while parsing and
//! resolved when every item is known, so an item may be used before it is
//! defined. Value names are renumbered in definition order (parameters
//! first). Recursion is bounded by [`MAX_DEPTH`] for blocks and types (and
//! constant initializers, which follow their type), so no input can exhaust
//! the stack.

use super::ParseError;
use super::lexer::{Lexer, Tok, Token, unescape};
use super::printer::{F32_NAN, F64_NAN};
use crate::entity::EntityRef;
use crate::ir::{
    AtomicOp, Axis, BinaryOp, Block, Builtin, CmpOp, ConstDecl, ConstId, ConstInit, FuncId, FuncKind, Function,
    HostRef, MathFn, Module, Op, Span, Stage, StateField, Stmt, StmtKind, Strategy, UnaryOp, Value, ValueData, Var,
    VarDecl, VarKind,
};
use crate::types::{AddrSpace, Scalar, Type};
use crate::typing::literal_fits;
use std::collections::HashMap;

/// The deepest nesting of blocks (`if`, `loop`) and of types the parser
/// accepts.
pub const MAX_DEPTH: usize = 64;

pub(super) fn parse_module(src: &str) -> Result<Module, ParseError> {
    let mut p = Parser::new(src);
    p.module()?;
    p.resolve()?;
    Ok(p.module)
}

/// Parses one scalar literal of type `ty` (the whole of `src`), as the
/// `const` operation would read it.
pub(super) fn parse_scalar_literal(src: &str, ty: Scalar) -> Result<u64, ParseError> {
    let mut p = Parser::new(src);
    let lit = p.literal()?;
    let bits = literal_bits(&Type::Scalar(ty), &lit)?;
    let rest = p.next()?;
    if rest.tok != Tok::Eof {
        return err(rest.span, format!("unexpected {} after the literal", rest.describe()));
    }
    Ok(bits)
}

pub(super) fn parse_type(src: &str) -> Result<Type, ParseError> {
    let mut p = Parser::new(src);
    let ty = p.ty(0)?;
    let rest = p.next()?;
    if rest.tok != Tok::Eof {
        return err(rest.span, format!("unexpected {} after the type", rest.describe()));
    }
    Ok(ty)
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Parser<'a> {
        Parser {
            lex: Lexer::new(src),
            ahead: Vec::new(),
            items: HashMap::new(),
            refs: Vec::new(),
            module: Module::new(),
        }
    }
}

fn err<T>(span: Span, message: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError { span, message: message.into() })
}

fn is_symbol_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn is_global_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn is_patch_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

fn is_value_name(s: &str) -> bool {
    s.len() > 1 && s.starts_with('v') && s.bytes().skip(1).all(|b| b.is_ascii_digit())
}

#[derive(Copy, Clone)]
enum Item {
    Func(FuncId),
    Const(ConstId),
}

/// A use of `@name`, resolved after the whole module is parsed.
struct Ref<'a> {
    name: &'a str,
    span: Span,
}

/// A literal as written, before it is given a type.
struct Lit<'a> {
    neg: bool,
    tok: Token<'a>,
    span: Span,
}

impl Lit<'_> {
    fn text(&self) -> String {
        let t = self.tok.describe();
        if self.neg { format!("`-{}", &t[1..]) } else { t }
    }
}

/// Per-function parsing state.
struct FnCx<'a> {
    func: Function,
    values: HashMap<&'a str, (Value, Span)>,
    vars: HashMap<&'a str, Var>,
}

struct Parser<'a> {
    lex: Lexer<'a>,
    /// Tokens peeked but not consumed (at most two).
    ahead: Vec<Token<'a>>,
    items: HashMap<&'a str, (Item, Span)>,
    refs: Vec<Ref<'a>>,
    module: Module,
}

impl<'a> Parser<'a> {
    // ---- tokens -------------------------------------------------------

    fn peek(&mut self) -> Result<Token<'a>, ParseError> {
        self.peek_nth(0)
    }

    fn peek_nth(&mut self, n: usize) -> Result<Token<'a>, ParseError> {
        while self.ahead.len() <= n {
            let t = self.lex.next()?;
            self.ahead.push(t);
        }
        Ok(self.ahead[n])
    }

    fn next(&mut self) -> Result<Token<'a>, ParseError> {
        if self.ahead.is_empty() { self.lex.next() } else { Ok(self.ahead.remove(0)) }
    }

    fn at_punct(&mut self, c: char) -> Result<bool, ParseError> {
        Ok(self.peek()?.tok == Tok::Punct(c))
    }

    fn at_ident(&mut self, s: &str) -> Result<bool, ParseError> {
        Ok(self.peek()?.tok == Tok::Ident(s))
    }

    /// Consumes the punctuation `c`, or fails with "expected `c` {context}".
    fn expect(&mut self, c: char, context: &str) -> Result<Token<'a>, ParseError> {
        let t = self.next()?;
        if t.tok == Tok::Punct(c) {
            return Ok(t);
        }
        err(t.span, format!("expected `{c}` {context}, found {}", t.describe()))
    }

    /// Consumes an identifier.
    fn ident(&mut self, what: &str) -> Result<Token<'a>, ParseError> {
        let t = self.next()?;
        match t.tok {
            Tok::Ident(_) => Ok(t),
            _ => err(t.span, format!("expected {what}, found {}", t.describe())),
        }
    }

    /// `@name`: returns the name token.
    fn at_name(&mut self, what: &str) -> Result<Token<'a>, ParseError> {
        self.expect('@', &format!("before {what}"))?;
        self.ident(what)
    }

    /// A decimal `u32` (array lengths, field numbers).
    fn u32_literal(&mut self, what: &str) -> Result<u32, ParseError> {
        let t = self.next()?;
        match t.tok {
            Tok::Num(s) if s.bytes().all(|b| b.is_ascii_digit()) => match s.parse::<u32>() {
                Ok(n) => Ok(n),
                Err(_) => err(t.span, format!("{what} {s} does not fit u32")),
            },
            _ => err(t.span, format!("expected {what}, found {}", t.describe())),
        }
    }

    // ---- items --------------------------------------------------------

    fn module(&mut self) -> Result<(), ParseError> {
        let mut first = true;
        loop {
            let t = self.next()?;
            let at_start = std::mem::replace(&mut first, false);
            match t.tok {
                Tok::Eof => return Ok(()),
                Tok::Ident("lowered") if at_start => {
                    let s = self.ident("a strategy (`bake`, `patch` or `table`)")?;
                    let Some(strategy) = Strategy::from_name(s.text) else {
                        return err(
                            s.span,
                            format!("expected a strategy (`bake`, `patch` or `table`), found {}", s.describe()),
                        );
                    };
                    self.module.stage = Stage::Lowered(strategy);
                }
                Tok::Ident("lowered") => {
                    return err(t.span, "`lowered ...` may only be the first item of a module");
                }
                Tok::Ident("const") => self.const_decl(t.span)?,
                Tok::Ident("kernel") => self.function(t.span, FuncKind::Kernel)?,
                Tok::Ident("fn") => self.function(t.span, FuncKind::Device)?,
                Tok::Ident("import") => {
                    let f = self.next()?;
                    if f.tok != Tok::Ident("fn") {
                        return err(f.span, format!("expected `fn` after `import`, found {}", f.describe()));
                    }
                    self.function(t.span, FuncKind::Import)?;
                }
                _ => {
                    return err(
                        t.span,
                        format!("expected `const`, `kernel` or `fn` to start an item, found {}", t.describe()),
                    );
                }
            }
        }
    }

    fn define_item(&mut self, name: Token<'a>, item: Item) -> Result<(), ParseError> {
        if let Some((_, first)) = self.items.get(name.text) {
            return err(name.span, format!("@{} is defined twice (first at {first})", name.text));
        }
        self.items.insert(name.text, (item, name.span));
        Ok(())
    }

    fn const_decl(&mut self, span: Span) -> Result<(), ParseError> {
        let name = self.at_name("the constant's name")?;
        let id = ConstId::new(self.module.consts.len());
        self.define_item(name, Item::Const(id))?;
        self.expect(':', "after the constant's name")?;
        let ty = self.ty(0)?;
        self.expect('=', "after the constant's type")?;
        let init = self.init(&ty)?;
        self.module.consts.push(ConstDecl { name: name.text.to_string(), ty, init, span });
        Ok(())
    }

    /// An initializer shaped like `ty` (recursion bounded by the type's depth).
    fn init(&mut self, ty: &Type) -> Result<ConstInit, ParseError> {
        // `ref` is read at any position; the verifier allows it only where
        // the type has a `word`.
        if self.at_ident("ref")? {
            self.next()?;
            return Ok(ConstInit::Ref(self.host_ref()?));
        }
        let (close, what, n) = match ty {
            Type::Array(_, n) => (']', "elements", u64::from(*n)),
            Type::Struct(fields) => ('}', "fields", fields.len() as u64),
            _ => {
                let lit = self.literal()?;
                return Ok(ConstInit::Scalar(literal_bits(ty, &lit)?));
            }
        };
        let open = if close == ']' { '[' } else { '{' };
        let start = self.expect(open, &format!("to start the initializer of {ty}"))?;
        let mut items = Vec::new();
        if n == 0 && self.at_punct(close)? {
            self.next()?;
            return Ok(ConstInit::Array(items));
        }
        loop {
            let t = self.peek()?;
            if items.len() as u64 >= n {
                return err(t.span, format!("too many {what} for {ty}: expected {n}"));
            }
            let item_ty = match ty {
                Type::Array(e, _) => &**e,
                Type::Struct(fields) => &fields[items.len()],
                _ => unreachable!("only aggregates reach here"),
            };
            items.push(self.init(item_ty)?);
            let t = self.next()?;
            match t.tok {
                Tok::Punct(',') => {}
                Tok::Punct(c) if c == close => break,
                _ => {
                    return err(
                        t.span,
                        format!("expected `,` or `{close}` after an initializer, found {}", t.describe()),
                    );
                }
            }
        }
        if (items.len() as u64) < n {
            return err(start.span, format!("expected {n} {what} for {ty}, found {}", items.len()));
        }
        Ok(if close == ']' { ConstInit::Array(items) } else { ConstInit::Struct(items) })
    }

    fn function(&mut self, span: Span, kind: FuncKind) -> Result<(), ParseError> {
        let name = self.at_name("the function's name")?;
        let id = FuncId::new(self.module.funcs.len());
        self.define_item(name, Item::Func(id))?;
        let mut cx = FnCx { func: Function::new(name.text, kind), values: HashMap::new(), vars: HashMap::new() };
        cx.func.span = span;
        self.expect('(', "after the function's name")?;
        if self.at_punct(')')? {
            self.next()?;
        } else {
            loop {
                let v = self.next()?;
                if !matches!(v.tok, Tok::Ident(s) if is_value_name(s)) {
                    return err(v.span, format!("expected a parameter (`v<digits>`), found {}", v.describe()));
                }
                self.expect(':', "after the parameter's name")?;
                let ty = self.ty(0)?;
                let value = define_value(&mut cx, v, ty)?;
                cx.func.params.push(value);
                if self.at_ident("len")? {
                    self.len_param(&mut cx, value)?;
                }
                let t = self.next()?;
                match t.tok {
                    Tok::Punct(',') => {}
                    Tok::Punct(')') => break,
                    _ => {
                        return err(t.span, format!("expected `,` or `)` after a parameter, found {}", t.describe()));
                    }
                }
            }
        }
        if self.peek()?.tok == Tok::Arrow {
            self.next()?;
            cx.func.ret = Some(self.ty(0)?);
        }
        if self.at_ident("block")? {
            // `block(x, y, z)`: the launch shape ([`Function::block`]).
            self.next()?;
            self.expect('(', "after `block`")?;
            let x = self.u32_literal("the block's x")?;
            self.expect(',', "after the block's x")?;
            let y = self.u32_literal("the block's y")?;
            self.expect(',', "after the block's y")?;
            let z = self.u32_literal("the block's z")?;
            self.expect(')', "after the block's z")?;
            cx.func.block = Some([x, y, z]);
        }
        if kind == FuncKind::Import {
            if self.at_punct('{')? {
                let t = self.next()?;
                return err(t.span, "an `import fn` has no body: the library that defines it is linked in later");
            }
            self.module.funcs.push(cx.func);
            return Ok(());
        }
        let open = self.expect('{', "to start the function's body")?;
        while self.at_ident("local")? || self.at_ident("shared")? {
            self.var_decl(&mut cx)?;
        }
        cx.func.body = self.block_body(&mut cx, open.span, 0)?;
        self.module.funcs.push(cx.func);
        Ok(())
    }

    /// `len(vK)` after parameter `len`'s type: `len` counts elements of
    /// the earlier parameter `vK` ([`crate::LenParam`]).
    fn len_param(&mut self, cx: &mut FnCx<'a>, len: Value) -> Result<(), ParseError> {
        self.next()?;
        self.expect('(', "after `len`")?;
        let t = self.next()?;
        let of = match t.tok {
            Tok::Ident(s) if is_value_name(s) => match cx.values.get(s) {
                Some(&(of, _)) => of,
                None => return err(t.span, format!("`len({s})` names no earlier parameter")),
            },
            _ => return err(t.span, format!("expected a parameter in `len(…)`, found {}", t.describe())),
        };
        self.expect(')', "after `len`'s parameter")?;
        cx.func.lens.push(crate::ir::LenParam { len, of });
        Ok(())
    }

    fn var_decl(&mut self, cx: &mut FnCx<'a>) -> Result<(), ParseError> {
        let kw = self.next()?;
        let kind = if kw.tok == Tok::Ident("local") { VarKind::Local } else { VarKind::Shared };
        self.expect('%', &format!("after `{}`", kw.text))?;
        let name = self.ident("a variable name")?;
        if cx.vars.contains_key(name.text) {
            return err(name.span, format!("variable %{} is declared twice", name.text));
        }
        self.expect(':', "after the variable's name")?;
        let ty = self.ty(0)?;
        let var = cx.func.vars.push(VarDecl { name: name.text.to_string(), kind, ty, span: kw.span });
        cx.vars.insert(name.text, var);
        Ok(())
    }

    // ---- types --------------------------------------------------------

    fn ty(&mut self, depth: usize) -> Result<Type, ParseError> {
        let t = self.next()?;
        if depth >= MAX_DEPTH {
            return err(t.span, format!("type nested deeper than {MAX_DEPTH} levels"));
        }
        match t.tok {
            Tok::Ident("ptr") => {
                self.expect('<', "after `ptr`")?;
                let s = self.ident("an address space (`global`, `shared`, `local` or `const`)")?;
                let Some(space) = AddrSpace::from_name(s.text) else {
                    return err(
                        s.span,
                        format!(
                            "expected an address space (`global`, `shared`, `local` or `const`), found {}",
                            s.describe()
                        ),
                    );
                };
                self.expect(',', "after the address space")?;
                let pointee = self.ty(depth + 1)?;
                self.expect('>', "to close the pointer type")?;
                Ok(Type::ptr(space, pointee))
            }
            Tok::Ident(s) => match Scalar::from_name(s) {
                Some(s) => Ok(Type::Scalar(s)),
                None => err(t.span, format!("expected a type, found {}", t.describe())),
            },
            Tok::Punct('[') => {
                let elem = self.ty(depth + 1)?;
                if !self.ahead.is_empty() {
                    let t = self.next()?;
                    return err(
                        t.span,
                        format!("expected `;` after the element type of an array, found {}", t.describe()),
                    );
                }
                self.lex.array_semicolon()?;
                let n = self.u32_literal("an array length")?;
                self.expect(']', "to close the array type")?;
                Ok(Type::array(elem, n))
            }
            Tok::Punct('{') => {
                let mut fields = Vec::new();
                loop {
                    fields.push(self.ty(depth + 1)?);
                    let t = self.next()?;
                    match t.tok {
                        Tok::Punct(',') => {}
                        Tok::Punct('}') => break,
                        _ => {
                            return err(
                                t.span,
                                format!("expected `,` or `}}` after a field type, found {}", t.describe()),
                            );
                        }
                    }
                }
                Ok(Type::Struct(fields))
            }
            _ => err(t.span, format!("expected a type, found {}", t.describe())),
        }
    }

    // ---- statements ---------------------------------------------------

    /// Statements up to and including the `}` that closes the block opened
    /// at `open`.
    fn block_body(&mut self, cx: &mut FnCx<'a>, open: Span, depth: usize) -> Result<Block, ParseError> {
        let mut block = Vec::new();
        loop {
            let t = self.peek()?;
            match t.tok {
                Tok::Punct('}') => {
                    self.next()?;
                    return Ok(block);
                }
                Tok::Eof => {
                    return err(
                        t.span,
                        format!("expected `}}` to close the block opened at {open}, found end of input"),
                    );
                }
                _ => block.push(self.stmt(cx, depth)?),
            }
        }
    }

    /// `{` stmt* `}` nested one level below `depth`.
    fn nested_block(&mut self, cx: &mut FnCx<'a>, depth: usize, context: &str) -> Result<Block, ParseError> {
        let open = self.expect('{', context)?;
        if depth + 1 > MAX_DEPTH {
            return err(open.span, format!("blocks nested deeper than {MAX_DEPTH} levels"));
        }
        self.block_body(cx, open.span, depth + 1)
    }

    fn stmt(&mut self, cx: &mut FnCx<'a>, depth: usize) -> Result<Stmt, ParseError> {
        let t = self.next()?;
        let span = t.span;
        let kind = match t.tok {
            Tok::Ident(s) if is_value_name(s) => {
                if let Some((_, first)) = cx.values.get(s) {
                    return err(span, format!("value {s} is defined twice (first at {first})"));
                }
                self.expect(':', &format!("after {s}"))?;
                let ty = self.ty(0)?;
                self.expect('=', "after the value's type")?;
                let op = self.op(cx, &ty)?;
                let result = define_value(cx, t, ty)?;
                StmtKind::Let { result, op }
            }
            Tok::Ident("store") => {
                let (ptr, index) = self.place(cx)?;
                self.expect(',', "after the store's address")?;
                let value = self.value(cx)?;
                StmtKind::Store { ptr, index, value }
            }
            Tok::Ident("set") => {
                let var = self.var(cx)?;
                self.expect(',', "after the variable")?;
                let value = self.value(cx)?;
                StmtKind::Set { var, value }
            }
            Tok::Ident("call") => {
                let (f, args) = self.call(cx)?;
                StmtKind::Call(f, args)
            }
            Tok::Ident("barrier") => StmtKind::Barrier,
            Tok::Ident("exit") => StmtKind::Exit,
            Tok::Ident("break") => StmtKind::Break,
            Tok::Ident("continue") => StmtKind::Continue,
            Tok::Ident("return") => {
                // `return v3` unless `v3` starts the next statement (`v3: T = ..`).
                let a = self.peek()?;
                let has_value =
                    matches!(a.tok, Tok::Ident(s) if is_value_name(s)) && self.peek_nth(1)?.tok != Tok::Punct(':');
                StmtKind::Return(if has_value { Some(self.value(cx)?) } else { None })
            }
            Tok::Ident("if") => {
                let cond = self.value(cx)?;
                let then_body = self.nested_block(cx, depth, "after the `if` condition")?;
                let else_body = if self.at_ident("else")? {
                    self.next()?;
                    self.nested_block(cx, depth, "after `else`")?
                } else {
                    Vec::new()
                };
                StmtKind::If { cond, then_body, else_body }
            }
            Tok::Ident("loop") => StmtKind::Loop(self.nested_block(cx, depth, "after `loop`")?),
            Tok::Ident("local" | "shared") => {
                return err(
                    span,
                    format!("`{}` declarations must come before the first statement of the function", t.text),
                );
            }
            _ => return err(span, format!("expected a statement, found {}", t.describe())),
        };
        Ok(Stmt { kind, span })
    }

    // ---- operations ---------------------------------------------------

    fn value(&mut self, cx: &FnCx<'a>) -> Result<Value, ParseError> {
        let t = self.next()?;
        match t.tok {
            Tok::Ident(s) if is_value_name(s) => match cx.values.get(s) {
                Some(&(v, _)) => Ok(v),
                None => err(t.span, format!("undefined value {s}")),
            },
            _ => err(t.span, format!("expected a value (`v<digits>`), found {}", t.describe())),
        }
    }

    fn var(&mut self, cx: &FnCx<'a>) -> Result<Var, ParseError> {
        self.expect('%', "before a variable name")?;
        let name = self.ident("a variable name")?;
        match cx.vars.get(name.text) {
            Some(&v) => Ok(v),
            None => err(name.span, format!("undefined variable %{}", name.text)),
        }
    }

    /// `v` or `v[i]`.
    fn place(&mut self, cx: &FnCx<'a>) -> Result<(Value, Option<Value>), ParseError> {
        let ptr = self.value(cx)?;
        if !self.at_punct('[')? {
            return Ok((ptr, None));
        }
        self.next()?;
        let index = self.value(cx)?;
        self.expect(']', "after the index")?;
        Ok((ptr, Some(index)))
    }

    /// `, v`
    fn comma_value(&mut self, cx: &FnCx<'a>) -> Result<Value, ParseError> {
        self.expect(',', "after operand")?;
        self.value(cx)
    }

    /// `@f(v1, v2)` after `call`.
    fn call(&mut self, cx: &FnCx<'a>) -> Result<(FuncId, Vec<Value>), ParseError> {
        let name = self.at_name("the callee's name")?;
        let f = FuncId::from_u32(self.reference(name)?);
        self.expect('(', "after the callee's name")?;
        let mut args = Vec::new();
        if self.at_punct(')')? {
            self.next()?;
            return Ok((f, args));
        }
        loop {
            args.push(self.value(cx)?);
            let t = self.next()?;
            match t.tok {
                Tok::Punct(',') => {}
                Tok::Punct(')') => return Ok((f, args)),
                _ => return err(t.span, format!("expected `,` or `)` after an argument, found {}", t.describe())),
            }
        }
    }

    fn reference(&mut self, name: Token<'a>) -> Result<u32, ParseError> {
        let Ok(i) = u32::try_from(self.refs.len()) else {
            return err(name.span, "too many references to functions and constants");
        };
        self.refs.push(Ref { name: name.text, span: name.span });
        Ok(i)
    }

    fn op(&mut self, cx: &FnCx<'a>, ty: &Type) -> Result<Op, ParseError> {
        let t = self.ident("an operation")?;
        let name = t.text;
        if let Some(u) = UnaryOp::from_name(name) {
            return Ok(Op::Unary(u, self.value(cx)?));
        }
        if let Some(b) = BinaryOp::from_name(name) {
            let a = self.value(cx)?;
            return Ok(Op::Binary(b, a, self.comma_value(cx)?));
        }
        if let Some(c) = CmpOp::from_name(name) {
            let a = self.value(cx)?;
            return Ok(Op::Compare(c, a, self.comma_value(cx)?));
        }
        if let Some(m) = MathFn::from_name(name) {
            let mut args = vec![self.value(cx)?];
            while args.len() < m.arity() {
                args.push(self.comma_value(cx)?);
            }
            return Ok(Op::Math(m, args));
        }
        let builtin: Option<fn(Axis) -> Builtin> = match name {
            "thread_id" => Some(Builtin::ThreadId),
            "block_id" => Some(Builtin::BlockId),
            "block_dim" => Some(Builtin::BlockDim),
            "grid_dim" => Some(Builtin::GridDim),
            _ => None,
        };
        if let Some(make) = builtin {
            self.expect('.', &format!("after `{name}`"))?;
            let a = self.next()?;
            let axis = match a.tok {
                Tok::Ident("x") => Axis::X,
                Tok::Ident("y") => Axis::Y,
                Tok::Ident("z") => Axis::Z,
                _ => return err(a.span, format!("expected `x`, `y` or `z` after `{name}.`, found {}", a.describe())),
            };
            return Ok(Op::Builtin(make(axis)));
        }
        Ok(match name {
            "const" => {
                let lit = self.literal()?;
                Op::Const(literal_bits(ty, &lit)?)
            }
            "select" => {
                let c = self.value(cx)?;
                let a = self.comma_value(cx)?;
                Op::Select(c, a, self.comma_value(cx)?)
            }
            "convert" => Op::Convert(self.value(cx)?),
            "bitcast" => Op::Bitcast(self.value(cx)?),
            "load" => {
                let (ptr, index) = self.place(cx)?;
                Op::Load { ptr, index }
            }
            "offset" => {
                let ptr = self.value(cx)?;
                Op::Offset { ptr, index: self.comma_value(cx)? }
            }
            "elem" => {
                let ptr = self.value(cx)?;
                Op::Elem { ptr, index: self.comma_value(cx)? }
            }
            "field" => {
                let ptr = self.value(cx)?;
                self.expect(',', "after operand")?;
                Op::Field { ptr, field: self.u32_literal("a field number")? }
            }
            "addr" => {
                if self.at_punct('@')? {
                    let name = self.at_name("a constant's name")?;
                    Op::ConstAddr(ConstId::from_u32(self.reference(name)?))
                } else if self.at_punct('%')? {
                    Op::VarAddr(self.var(cx)?)
                } else {
                    let t = self.next()?;
                    return err(
                        t.span,
                        format!("expected `%variable` or `@constant` after `addr`, found {}", t.describe()),
                    );
                }
            }
            "get" => Op::Get(self.var(cx)?),
            "ref" => Op::Ref(self.host_ref()?),
            "wordptr" => Op::WordPtr(self.value(cx)?),
            "state" => {
                self.expect('.', "after `state`")?;
                let a = self.ident("a kernel state field")?;
                let Some(field) = StateField::ALL.into_iter().find(|f| f.name() == a.text) else {
                    return err(
                        a.span,
                        format!(
                            "expected `reloc_table`, `exception` or `rng_seed` after `state.`, found {}",
                            a.describe()
                        ),
                    );
                };
                Op::State(field)
            }
            "word" => {
                let w = self.next()?;
                let bits = match w.tok {
                    Tok::Hex(h) => u64::from_str_radix(h, 16).ok(),
                    Tok::Num(d) if d.bytes().all(|b| b.is_ascii_digit()) => d.parse::<u64>().ok(),
                    _ => {
                        return err(
                            w.span,
                            format!("expected a word (hex or decimal) after `word`, found {}", w.describe()),
                        );
                    }
                };
                match bits {
                    Some(b) => Op::BakedWord(b),
                    None => return err(w.span, format!("word {} does not fit 64 bits", w.describe())),
                }
            }
            "patch" => {
                let name = self.raw_name(true, is_patch_char, "a patch name ([A-Za-z0-9_$]+) after `patch`")?;
                Op::Patch(name.to_string())
            }
            "call" => {
                let (f, args) = self.call(cx)?;
                Op::Call(f, args)
            }
            "atomic" => {
                self.expect('.', "after `atomic`")?;
                let a = self.ident("an atomic operation")?;
                let (ptr, index) = self.place(cx)?;
                if a.text == "cas" {
                    let expected = self.comma_value(cx)?;
                    let new = self.comma_value(cx)?;
                    Op::AtomicCas { ptr, index, expected, new }
                } else {
                    let Some(op) =
                        AtomicOp::ALL.iter().copied().find(|o| o.name().strip_prefix("atomic.") == Some(a.text))
                    else {
                        return err(a.span, format!("unknown atomic operation `atomic.{}`", a.text));
                    };
                    Op::Atomic { op, ptr, index, value: self.comma_value(cx)? }
                }
            }
            _ => return err(t.span, format!("unknown operation `{name}`")),
        })
    }

    /// A name scanned from the characters right after the last token.
    fn raw_name(&mut self, skip_trivia: bool, ok: fn(char) -> bool, what: &str) -> Result<&'a str, ParseError> {
        if let Some(t) = self.ahead.first().copied() {
            // Only reachable if a caller peeked; never in the grammar's flow.
            return err(t.span, format!("expected {what}, found {}", t.describe()));
        }
        Ok(self.lex.raw_name(skip_trivia, ok, what)?.0)
    }

    /// After `ref`: `:symbol`, `@constant`, `"text"` or `global name [+ offset]`.
    fn host_ref(&mut self) -> Result<HostRef, ParseError> {
        let t = self.next()?;
        Ok(match t.tok {
            Tok::Punct(':') => {
                let name = self.raw_name(false, is_symbol_char, "a symbol name ([A-Za-z0-9_.]+) right after `:`")?;
                HostRef::Symbol(name.to_string())
            }
            Tok::Punct('@') => {
                let name = self.ident("a constant's name")?;
                HostRef::Value(ConstId::from_u32(self.reference(name)?))
            }
            Tok::Str(raw) => HostRef::Str(unescape(raw)),
            Tok::Ident("global") => {
                let name = self.raw_name(true, is_global_char, "a global's name ([A-Za-z0-9_]+)")?.to_string();
                let mut offset = 0;
                if self.at_punct('+')? {
                    self.next()?;
                    let o = self.next()?;
                    offset = match o.tok {
                        Tok::Num(d) if d.bytes().all(|b| b.is_ascii_digit()) => match d.parse::<u64>() {
                            Ok(n) => n,
                            Err(_) => return err(o.span, format!("offset {d} does not fit u64")),
                        },
                        _ => return err(o.span, format!("expected a byte offset after `+`, found {}", o.describe())),
                    };
                }
                HostRef::Global { name, offset }
            }
            _ => {
                return err(
                    t.span,
                    format!(
                        "expected `:symbol`, `@constant`, a string or `global name` after `ref`, found {}",
                        t.describe()
                    ),
                );
            }
        })
    }

    /// `-`? followed by a number, hex, `true`, `false`, `inf` or `nan`.
    fn literal(&mut self) -> Result<Lit<'a>, ParseError> {
        let first = self.next()?;
        let (neg, tok) = if first.tok == Tok::Punct('-') { (true, self.next()?) } else { (false, first) };
        let ok = match tok.tok {
            Tok::Num(_) => true,
            Tok::Hex(_) | Tok::Ident("true" | "false" | "nan") => !neg,
            Tok::Ident("inf") => true,
            _ => false,
        };
        if !ok {
            let what = if neg { "a number after `-`" } else { "a literal" };
            return err(tok.span, format!("expected {what}, found {}", tok.describe()));
        }
        Ok(Lit { neg, tok, span: first.span })
    }

    // ---- references -----------------------------------------------------

    /// Replaces every function and constant reference (an index into
    /// `refs`) by the item it names.
    fn resolve(&mut self) -> Result<(), ParseError> {
        let mut consts = std::mem::take(&mut self.module.consts);
        let result = consts.keys().try_for_each(|k| self.resolve_init(&mut consts[k].init));
        self.module.consts = consts;
        result?;
        let mut funcs = std::mem::take(&mut self.module.funcs);
        let result = funcs.keys().try_for_each(|k| self.resolve_block(&mut funcs[k].body));
        self.module.funcs = funcs;
        result
    }

    fn resolve_block(&self, block: &mut Block) -> Result<(), ParseError> {
        for s in block {
            match &mut s.kind {
                StmtKind::Call(f, _) | StmtKind::Let { op: Op::Call(f, _), .. } => *f = self.resolve_func(*f)?,
                StmtKind::Let { op: Op::ConstAddr(c) | Op::Ref(HostRef::Value(c)), .. } => {
                    *c = self.resolve_const(*c)?
                }
                StmtKind::If { then_body, else_body, .. } => {
                    self.resolve_block(then_body)?;
                    self.resolve_block(else_body)?;
                }
                StmtKind::Loop(body) => self.resolve_block(body)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn resolve_init(&self, init: &mut ConstInit) -> Result<(), ParseError> {
        match init {
            ConstInit::Ref(HostRef::Value(c)) => *c = self.resolve_const(*c)?,
            ConstInit::Array(items) | ConstInit::Struct(items) => {
                items.iter_mut().try_for_each(|i| self.resolve_init(i))?;
            }
            ConstInit::Scalar(_) | ConstInit::Ref(_) => {}
        }
        Ok(())
    }

    fn lookup(&self, i: u32) -> Result<(&Ref<'a>, Option<Item>), ParseError> {
        match self.refs.get(i as usize) {
            Some(r) => Ok((r, self.items.get(r.name).map(|&(item, _)| item))),
            None => err(Span::default(), "internal error: dangling reference"),
        }
    }

    fn resolve_func(&self, f: FuncId) -> Result<FuncId, ParseError> {
        match self.lookup(f.as_u32())? {
            (_, Some(Item::Func(g))) => Ok(g),
            (r, Some(Item::Const(_))) => err(r.span, format!("@{} is a constant, not a function", r.name)),
            (r, None) => err(r.span, format!("unknown function @{}", r.name)),
        }
    }

    fn resolve_const(&self, c: ConstId) -> Result<ConstId, ParseError> {
        match self.lookup(c.as_u32())? {
            (_, Some(Item::Const(d))) => Ok(d),
            (r, Some(Item::Func(_))) => err(r.span, format!("@{} is a function, not a constant", r.name)),
            (r, None) => err(r.span, format!("unknown constant @{}", r.name)),
        }
    }
}

/// Defines the value named by `name` (renumbered: the next index).
fn define_value<'a>(cx: &mut FnCx<'a>, name: Token<'a>, ty: Type) -> Result<Value, ParseError> {
    if let Some((_, first)) = cx.values.get(name.text) {
        return err(name.span, format!("value {} is defined twice (first at {first})", name.text));
    }
    let v = cx.func.values.push(ValueData { ty });
    cx.values.insert(name.text, (v, name.span));
    Ok(v)
}

/// The bits of `lit` as a literal of `ty`. `word`, pointer and aggregate
/// types have no literals; the verifier reports them, so here a hex literal
/// keeps its bits and any other literal gives 0.
fn literal_bits(ty: &Type, lit: &Lit<'_>) -> Result<u64, ParseError> {
    let s = match ty {
        Type::Scalar(s) if *s != Scalar::Word => *s,
        _ => return if let Tok::Hex(h) = lit.tok.tok { hex_bits(h, lit) } else { Ok(0) },
    };
    let out_of_range = || err(lit.span, format!("literal {} is out of range for {s}", lit.text()));
    let wrong_kind = |kind: &str| err(lit.span, format!("expected {kind} for {s}, found {}", lit.text()));
    if let Tok::Hex(h) = lit.tok.tok {
        let bits = hex_bits(h, lit)?;
        if !literal_fits(s, bits) {
            return err(lit.span, format!("literal {} does not fit {s}", lit.text()));
        }
        return Ok(bits);
    }
    match s {
        Scalar::Bool => match lit.tok.tok {
            Tok::Ident("true") => Ok(1),
            Tok::Ident("false") => Ok(0),
            _ => wrong_kind("`true` or `false`"),
        },
        Scalar::I32 | Scalar::U32 | Scalar::I64 | Scalar::U64 | Scalar::U8 | Scalar::I8 | Scalar::U16 | Scalar::I16 => {
            let Tok::Num(digits) = lit.tok.tok else { return wrong_kind("an integer literal") };
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                return wrong_kind("an integer literal");
            }
            let Ok(mag) = digits.parse::<u64>() else { return out_of_range() };
            let (min_neg, max_pos): (u64, u64) = match s {
                Scalar::I8 => (1 << 7, i8::MAX as u64),
                Scalar::U8 => (0, u64::from(u8::MAX)),
                Scalar::I16 => (1 << 15, i16::MAX as u64),
                Scalar::U16 => (0, u64::from(u16::MAX)),
                Scalar::I32 => (1 << 31, i32::MAX as u64),
                Scalar::U32 => (0, u64::from(u32::MAX)),
                Scalar::I64 => (1 << 63, i64::MAX as u64),
                _ => (0, u64::MAX),
            };
            if lit.neg {
                if mag > min_neg || (mag > 0 && min_neg == 0) {
                    return out_of_range();
                }
                let bits = (mag as i64).wrapping_neg() as u64;
                Ok(if s.size() < 8 { bits & ((1 << (8 * s.size())) - 1) } else { bits })
            } else if mag > max_pos {
                out_of_range()
            } else {
                Ok(mag)
            }
        }
        Scalar::F32 | Scalar::F64 => {
            let single = s == Scalar::F32;
            match lit.tok.tok {
                Tok::Ident("inf") => Ok(match (single, lit.neg) {
                    (true, false) => u64::from(f32::INFINITY.to_bits()),
                    (true, true) => u64::from(f32::NEG_INFINITY.to_bits()),
                    (false, false) => f64::INFINITY.to_bits(),
                    (false, true) => f64::NEG_INFINITY.to_bits(),
                }),
                Tok::Ident("nan") => Ok(if single { u64::from(F32_NAN) } else { F64_NAN }),
                Tok::Num(text) => {
                    let text = if lit.neg { format!("-{text}") } else { text.to_string() };
                    // Parsed at the literal's own width: no double rounding.
                    let bits = if single {
                        text.parse::<f32>().ok().filter(|x| x.is_finite()).map(|x| u64::from(x.to_bits()))
                    } else {
                        text.parse::<f64>().ok().filter(|x| x.is_finite()).map(f64::to_bits)
                    };
                    match bits {
                        Some(b) => Ok(b),
                        None => out_of_range(),
                    }
                }
                _ => wrong_kind("a float literal"),
            }
        }
        Scalar::Word => unreachable!("handled above"),
    }
}

fn hex_bits(digits: &str, lit: &Lit<'_>) -> Result<u64, ParseError> {
    match u64::from_str_radix(digits, 16) {
        Ok(b) => Ok(b),
        Err(_) => err(lit.span, format!("hex literal {} does not fit 64 bits", lit.text())),
    }
}
