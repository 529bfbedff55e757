//! The page that uploads files from a browser into a folder of a branch:
//! a file picker (a phone's camera roll) and a drop zone. Its script
//! (`/-/upload.js`) sends each file in pieces to the server's `/uploads`,
//! resuming after a dropped connection or a reload, then asks the server
//! to commit them; the server holds the commit to a push's rules.

use maud::html;

use crate::pages::{error_page, html, layout, path_url, seg, PageResult};
use crate::reply::Viewer;
use dmv_repo::ref_names::BRANCHES;
use dmv_repo::Repository;

/// `BRANCH/FOLDER/`: the upload form for that folder of that branch. The
/// branch is the shortest leading part naming one; in a repository with
/// no branch yet, the first part names the branch the upload makes.
pub fn upload(repo: &Repository, name: &str, rest: &str, viewer: &Viewer) -> PageResult {
    if !viewer.may_write {
        return Ok(error_page(
            403,
            Some(name),
            "uploading needs a write token: log in with one",
        ));
    }
    let branches = repo.refs.list(BRANCHES).map_err(|e| e.to_string())?;
    let parts: Vec<&str> = rest.split('/').collect();
    let found = (1..=parts.len()).map(|n| parts[..n].join("/")).find(|b| {
        branches
            .iter()
            .any(|(r, _)| r.strip_prefix(BRANCHES) == Some(b))
    });
    let (branch, seen) = match found {
        Some(b) => {
            let seen = branches
                .iter()
                .find(|(r, _)| r.strip_prefix(BRANCHES) == Some(&b))
                .map(|(_, id)| *id);
            (b, seen)
        }
        None if branches.is_empty() && !parts[0].is_empty() => (parts[0].to_string(), None),
        None => {
            return Err(format!(
                "uploads go onto a branch, and {rest} does not start with one"
            ))
        }
    };
    let folder = rest[branch.len()..].trim_matches('/').to_string();
    let base = format!("/{}", seg(name));
    let shown = if folder.is_empty() {
        "the top folder".to_string()
    } else {
        format!("{folder}/")
    };
    let body = html! {
        h1 { "Upload to " (shown) " on " (branch) }
        p.muted {
            "The files go into " (shown) " as one new commit on " (branch) ". A file of the same name is replaced, unless someone changed it after this page was opened. "
            @if seen.is_some() { a href={ (base) "/tree/" (seg(&branch)) "/" (path_url(&folder)) } { "back to the folder" } }
        }
        form.upload #upload data-repo=(seg(name)) data-branch=(branch) data-seen=(seen.map(|s| s.to_hex()).unwrap_or_default()) data-folder=(folder) data-secret=(viewer.form_secret.clone().unwrap_or_default()) {
            label for="files" { "Choose files" }
            input #files type="file" multiple name="files";
            div.drop #drop { "or drop files here" }
            label for="message" { "Message (optional)" }
            input #message type="text" name="message" placeholder="Upload from the web";
            p { button type="submit" { "Upload and commit" } }
        }
        ul.progress #progress {}
        p #status role="status" aria-live="polite" {}
        script src="/-/upload.js" {}
    };
    Ok(html(layout(
        &format!("Upload to {branch}:/{folder}"),
        Some(name),
        body,
    )))
}

/// The page's script, served as `/-/upload.js` (pages allow no inline
/// script). Pieces of 8 MiB, one request each; an upload's id is kept in
/// the browser's storage under the file's name, size and date, so a
/// reload picks it up where the server says it stopped.
pub const UPLOAD_SCRIPT: &str = r#"(function(){
var f=document.getElementById('upload');if(!f)return;
var d=f.dataset,picked=[],list=document.getElementById('progress'),status=document.getElementById('status'),drop=document.getElementById('drop'),input=document.getElementById('files');
var PIECE=8*1024*1024,base='/'+d.repo+'/uploads';
function headers(extra){var h={'x-dmv-form-secret':d.secret};for(var k in extra)h[k]=extra[k];return h;}
function add(files){for(var i=0;i<files.length;i++){var file=files[i],li=document.createElement('li'),bar=document.createElement('progress');
bar.max=file.size||1;bar.value=0;li.textContent=file.name+' ';li.appendChild(bar);list.appendChild(li);picked.push({file:file,bar:bar});}}
input.addEventListener('change',function(){add(input.files);});
if(/[?&]shared=1/.test(location.search)&&window.caches){caches.open('dmv-shared').then(function(c){return c.keys().then(function(keys){
return Promise.all(keys.map(function(k){return c.match(k).then(function(r){return r.blob().then(function(b){
return new File([b],decodeURIComponent(r.headers.get('x-name')||'shared'),{type:b.type,lastModified:+(r.headers.get('x-modified')||0)});});});}));});})
.then(function(files){add(files);status.textContent=files.length?(files.length===1?'1 shared file':files.length+' shared files')+' ready: upload and commit here.':'';});}
drop.addEventListener('dragover',function(e){e.preventDefault();drop.classList.add('over');});
drop.addEventListener('dragleave',function(){drop.classList.remove('over');});
drop.addEventListener('drop',function(e){e.preventDefault();drop.classList.remove('over');add(e.dataTransfer.files);});
function json(r){return r.text().then(function(t){if(!r.ok)throw new Error(t||r.statusText);return t?JSON.parse(t):{};});}
function wait(ms){return new Promise(function(r){setTimeout(r,ms);});}
function key(file){return 'dmv-upload:'+d.repo+':'+d.folder+':'+file.name+':'+file.size+':'+file.lastModified;}
function start(p){var k=key(p.file),id=null;try{id=localStorage.getItem(k);}catch(e){}
var ask=id?fetch(base+'/'+id,{headers:headers({})}).then(function(r){return r.ok?r.json():null;},function(){return null;}):Promise.resolve(null);
return ask.then(function(s){if(s&&s.size===p.file.size)return {id:id,received:s.received};
return fetch(base,{method:'POST',headers:headers({'content-type':'application/json'}),body:JSON.stringify({name:p.file.name,size:p.file.size})}).then(json)
.then(function(s){try{localStorage.setItem(k,s.id);}catch(e){}return {id:s.id,received:0};});});}
function send(p,up,tries){p.bar.value=up.received;if(up.received>=p.file.size)return Promise.resolve(up.id);
var piece=p.file.slice(up.received,Math.min(p.file.size,up.received+PIECE));
return fetch(base+'/'+up.id+'?offset='+up.received,{method:'PUT',headers:headers({'content-type':'application/octet-stream'}),body:piece}).then(function(r){
if(r.ok||r.status===409)return r.json().then(function(s){if(r.status===409)return wait(300).then(function(){up.received=s.received;return send(p,up,tries);});up.received=s.received;return send(p,up,0);});
return r.text().then(function(t){throw new Error(t);});
},function(e){if(tries>=20)throw e;status.textContent='Connection lost: resuming…';
return wait(Math.min(30000,500*Math.pow(2,tries))).then(function(){return fetch(base+'/'+up.id,{headers:headers({})}).then(json)
.then(function(s){status.textContent='';up.received=s.received;return send(p,up,tries+1);},function(){return send(p,up,tries+1);});});});}
f.addEventListener('submit',function(e){e.preventDefault();if(!picked.length){status.textContent='Choose or drop files first.';return;}
var button=f.querySelector('button[type=submit]');button.disabled=true;status.textContent='Uploading…';var done=[];
picked.reduce(function(chain,p){return chain.then(function(){return start(p).then(function(up){return send(p,up,0);})
.then(function(id){done.push({name:p.file.name,id:id,key:key(p.file)});});});},Promise.resolve())
.then(function(){status.textContent='Committing…';return fetch('/'+d.repo+'/commit-uploads',{method:'POST',headers:headers({'content-type':'application/json'}),
body:JSON.stringify({branch:d.branch,seen:d.seen,folder:d.folder,message:document.getElementById('message').value,files:done.map(function(x){return {name:x.name,id:x.id};})})}).then(json);})
.then(function(c){done.forEach(function(x){try{localStorage.removeItem(x.key);}catch(e){}});
(window.caches?caches.delete('dmv-shared'):Promise.resolve()).then(function(){location.href=c.url;},function(){location.href=c.url;});},
function(err){status.textContent=err.message;button.disabled=false;});});
})();"#;
